"""`nexus gate` command-line plumbing (regression: several tools files used to collapse into one source)."""

from __future__ import annotations

import json

from typer.testing import CliRunner


def _tools(path, names):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"tools": [{"name": n, "description": f"{n} tool", "inputSchema": {"type": "object"}} for n in names]}))
    return path


def test_registry_keeps_same_stem_files_and_namespaces_collisions(tmp_path):
    from nexus.cli.gate import _registry

    a = _tools(tmp_path / "a" / "tools.json", ["ping", "alpha"])
    b = _tools(tmp_path / "b" / "tools.json", ["ping", "beta"])
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps([
        {"name": "s1", "tools": {"s1": {"tools": [{"name": "dup", "description": "one", "inputSchema": {"type": "object"}}]}}},
        {"name": "s2", "tools": {"s2": {"tools": [{"name": "dup", "description": "two", "inputSchema": {"type": "object"}}]}}},
    ]))
    registry = _registry([a, b, catalogue])
    assert len(registry) == 6
    assert {"alpha", "beta", "s1.dup", "s2.dup"} <= set(registry.keys())
    assert sum(1 for k in registry.keys() if k.endswith("ping")) == 2


def test_gate_help_lists_the_commands():
    from nexus.cli import app

    result = CliRunner().invoke(app, ["gate", "--help"])
    assert result.exit_code == 0
    for command in ("train", "calibrate", "pool", "eval", "decide"):
        assert command in result.output
