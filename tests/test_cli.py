"""The `nexus` console entry point: a NexusError no command handled becomes one `error:` line and exit status 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nexus.cli as cli
from nexus.config import shipped_models_dir
from nexus.errors import ToolLoadError


def test_run_prints_a_nexus_error_as_one_line_and_exits_2(monkeypatch, capsys):
    def broken_file() -> None:
        raise ToolLoadError("tools.json[3] (tool 'x'): inputSchema must be a JSON object, got str")

    monkeypatch.setattr(cli, "app", broken_file)
    with pytest.raises(SystemExit) as stop:
        cli.run()
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: tools.json[3] (tool 'x'): inputSchema must be a JSON object, got str\n"
    monkeypatch.setattr(cli, "app", lambda: 1 / 0)  # anything else is a bug and keeps its traceback
    with pytest.raises(ZeroDivisionError):
        cli.run()


def test_a_corrupt_gate_file_is_one_clear_line_from_the_command(tmp_path):
    gate = tmp_path / "gate"
    shutil.copytree(shipped_models_dir() / "gate", gate)
    (gate / "nexus_gate.json").write_text('{"format": 1,', encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "get_time", "description": "Current time in a timezone", "inputSchema": {"type": "object"}}]))
    exe = Path(sys.executable).with_name("nexus")
    done = subprocess.run([str(exe), "gate", "decide", "what time is it", "--tools", str(tools), "--model", str(gate)],
                          capture_output=True, text=True, timeout=300, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"error: {gate}/nexus_gate.json: unreadable header" in done.stderr


def test_quiet_threads_keeps_a_short_spin_and_a_user_setting(monkeypatch):
    from nexus.cli.latency import SPIN_COUNT, quiet_threads

    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    quiet_threads()
    # a short spin, not PASSIVE: with no spin llama.cpp's OpenMP barriers sleep and a decode takes twice as long
    assert os.environ["GOMP_SPINCOUNT"] == SPIN_COUNT
    assert "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.setenv("GOMP_SPINCOUNT", "5")
    quiet_threads()
    assert os.environ["GOMP_SPINCOUNT"] == "5"
