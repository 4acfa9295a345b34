"""The benchmarks behind the README's tables, re-run and held to stored bounds (`make bench`; marked slow).

Each entry of `figures.json` names a CLI command and bounds on its JSON output (dotted paths); the data splits are
built here with the README's protocol, so a change that moves a reported figure past its bound fails loudly.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nexus.cli import app

FIGURES = json.loads((Path(__file__).with_name("figures.json")).read_text(encoding="utf-8"))
OPS = {">=": operator.ge, "<=": operator.le, "==": operator.eq}


def lookup(result: dict, dotted: str):
    value = result
    for part in dotted.split("."):
        value = value[part]
    return value


def violations(result: dict, bounds: dict) -> list[str]:
    """Every bound the result breaks, as readable lines.

    >>> violations({"a": {"b": 0.5}, "c": 3}, {"a.b": [">=", 0.6], "c": ["==", 3]})
    ['a.b = 0.5, expected >= 0.6']
    """
    return [f"{key} = {lookup(result, key)}, expected {op} {bound}" for key, (op, bound) in bounds.items()
            if not OPS[op](lookup(result, key), bound)]


@pytest.fixture(scope="module")
def splits(data_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("splits")
    runner = CliRunner()
    src = str(data_dir / "bfcl")
    for name, extra in (("T", []), ("D", ["--seed", "1", "--exclude", str(root / "T")])):
        out = runner.invoke(app, ["data", "bfcl", "--src", src, "--size", "250", "--no-tool", "200", "--out",
                                  str(root / name), *extra])
        assert out.exit_code == 0, out.output
    return {"T": str(root / "T"), "D": str(root / "D")}


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", [k for k in FIGURES if not k.startswith("_")])
def test_readme_figure_holds(name, splits, tmp_path):
    entry = FIGURES[name]
    command = [part.format(**splits) for part in entry["command"]]
    out = tmp_path / "result.json"
    result = CliRunner().invoke(app, [*command, "--json", str(out), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert violations(json.loads(out.read_text()), entry["bounds"]) == []


def test_bounds_are_checked_against_the_output():
    assert violations({"top1": 0.7}, {"top1": [">=", 0.77]}) == ["top1 = 0.7, expected >= 0.77"]
    assert violations({"x": {"p50": 1.0}}, {"x.p50": ["<=", 2.0]}) == []
