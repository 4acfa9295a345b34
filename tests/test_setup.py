"""What `make setup` installs is there: the tests that need a demo MCP server skip without it (a developer may run
one module by hand), so a set-up step that silently did nothing would leave `make test` green with those tests
skipped. This module fails instead, naming what is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nexus.demo import demo_servers_config

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / ".servers"
PYTHON_SERVERS = ("mcp-server-time", "mcp-server-git", "mcp-server-sqlite", "mcp-server-calculator")


@pytest.mark.parametrize("package", PYTHON_SERVERS)
def test_each_python_demo_server_is_installed(package):
    exe = SERVERS / package / "bin" / package
    assert exe.is_file(), f"{exe} is missing: run `make setup` (scripts/install_servers.sh .servers)"


def test_the_demo_config_names_every_server_this_machine_can_run(tmp_path):
    # git and node are optional on a developer's machine (the install script says so); where they are on PATH,
    # their servers must be configured, and so installed
    expected = {"time", "sqlite", "calculator"} | ({"git"} if shutil.which("git") else set())
    if shutil.which("node") and shutil.which("npm"):
        expected |= {"filesystem", "memory"}
    assert set(demo_servers_config(SERVERS, tmp_path)["mcpServers"]) == expected
