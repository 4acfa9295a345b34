"""`nexus gate` command-line plumbing: help, and train -> eval -> bench --gate -> decide end to end."""

from __future__ import annotations

import json

import pytest

from typer.testing import CliRunner


def test_gate_help_lists_the_commands():
    from nexus.cli import app

    result = CliRunner().invoke(app, ["gate", "--help"])
    assert result.exit_code == 0
    for command in ("train", "calibrate", "pool", "eval", "decide"):
        assert command in result.output


def test_train_eval_bench_and_decide_end_to_end(tmp_path, monkeypatch):
    """`nexus gate train` -> `gate eval` -> `bench routing --gate` -> `gate decide` on a small synthetic registry."""
    from nexus.cli import app

    from .test_training import _synthetic_registry

    reg, turns = _synthetic_registry()
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [reg.get(k).to_mcp() for k in reg.keys()]}))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": t.id, "query": t.query, "tool": t.tools[0] if t.tools else None}) + "\n"
                               for t in turns))
    monkeypatch.setenv("NEXUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NEXUS_GATE_TRAIN_THREADS", "1")
    model = tmp_path / "gate"
    runner = CliRunner()
    trained = runner.invoke(app, ["gate", "train", "--tools", str(tools), "--queries", str(queries), "--steps", "2",
                                  "--out", str(model)])
    assert trained.exit_code == 0, trained.output
    assert json.loads(trained.stdout[trained.stdout.index("{"):])["steps"] == 2
    refused = runner.invoke(app, ["gate", "eval", "--tools", str(tools), "--queries", str(queries), "--model", str(model)])
    assert refused.exit_code != 0 and "training data" in str(refused.exception)  # trained on these very tools
    evaluated = runner.invoke(app, ["gate", "eval", "--tools", str(tools), "--queries", str(queries), "--model", str(model),
                                    "--allow-overlap", "--run-dir", str(tmp_path / "eval"), "--json", str(tmp_path / "eval.json")])
    assert evaluated.exit_code == 0, evaluated.output
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["gate_n_relevant"] == 72 and result["overlap_with_training"] == len(reg)
    rows = [json.loads(line) for line in (tmp_path / "eval" / "gate_rows.jsonl").read_text().splitlines()]
    relevant = [r for r in rows if r["gold"]]  # the report is its raw rows, summarised
    assert result["top1_gate"] == pytest.approx(sum(r["top1"] == r["gold"] for r in relevant) / len(relevant))
    assert (tmp_path / "eval" / "reliability.png").is_file() and (tmp_path / "eval" / "risk_coverage.png").is_file()
    bench = runner.invoke(app, ["bench", "routing", "--tools", str(tools), "--queries", str(queries), "--gate",
                                "--gate-model", str(model), "--allow-overlap", "--scale", "0", "--run-dir", str(tmp_path / "bench"),
                                "--json", str(tmp_path / "bench.json")])
    assert bench.exit_code == 0, bench.output
    routed = json.loads((tmp_path / "bench.json").read_text())
    routed = routed[0] if isinstance(routed, list) else routed
    assert {"gate_ms_p50", "gate_ms_p99"} <= set(routed)
    # the same gate on the same turns: the benchmark reports what `gate eval` measured
    for key in ("top1_gate", "coverage", "selective_accuracy", "ece", "no_tool_auroc", "gate_n_relevant", "route_on_no_tool"):
        assert routed[key] == pytest.approx(result[key], nan_ok=True), key
    # a request the training turns do not hold ('please encrypt my invoice' is one of them)
    decided = runner.invoke(app, ["gate", "decide", "kindly encrypt that invoice for me", "--tools", str(tools), "--model", str(model)])
    assert decided.exit_code == 0, decided.output
    assert json.loads(decided.stdout[decided.stdout.index("{"):])["candidates"][0]["key"] == "encrypt_invoice"
