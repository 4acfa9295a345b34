import json

import pytest
from typer.testing import CliRunner

from nexus.bench.routing import evaluate, lookup_at_scale, plot_sweep
from nexus.registry import load_registry
from nexus.cli import app
from nexus.slb import HashEmbedder, SemanticLookasideBuffer

KEYS = {"n_tools", "n_queries", "top1", "top3", "top5", "top10", "mrr", "lookup_ms_p50", "lookup_ms_p99",
        "embed_ms_p50", "index_bytes_int8", "index_bytes_fp32", "top1_fp32"}


def tiny_dataset(tmp_path):
    tools = [{"name": f"tool_{i}", "description": f"handles widget{i} requests", "inputSchema": {"type": "object"}}
             for i in range(30)]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    queries = [{"id": str(i), "query": f"please deal with widget{i}", "tool": f"tool_{i}", "arguments": {}} for i in range(10)]
    queries.append({"id": "none", "query": "tell me a joke", "tool": None, "arguments": {}})
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    return queries


def test_evaluate_reports_the_interface_keys(tmp_path, saved_figures):
    queries = tiny_dataset(tmp_path)
    registry = load_registry(tmp_path / "tools.json")
    slb = SemanticLookasideBuffer(HashEmbedder(), keep_fp32=True)
    slb.sync(registry)
    result, rows = evaluate(slb, registry, queries)
    assert KEYS <= result.keys()
    assert result["n_queries"] == 10 and result["n_no_tool"] == 1
    assert result["top1"] == 1.0 and result["mrr"] == 1.0
    assert result["index_bytes_fp32"] == 30 * 64 * 4 and result["index_bytes_int8"] == 30 * 64 + 30 * 4
    assert len(rows) == 11
    scale = lookup_at_scale(slb, queries, 500, limit=5)
    assert scale["n_tools"] == 500 and scale["lookup_ms_p50"] > 0
    bigger = {**result, "n_tools": 300, "top1": 0.5, "top5": 0.75, "top10": 0.875, "top1_fp32": 0.625, "top1_gate": 0.7}
    plot = plot_sweep(tmp_path, [result, bigger])
    assert plot.read_bytes()[:4] == b"\x89PNG"
    # one line per metric that every result has (top1_gate only the second): accuracy against registry size
    assert saved_figures.lines("accuracy_vs_size.png") == {
        "top1": ([30, 300], [1.0, 0.5]), "top5": ([30, 300], [result["top5"], 0.75]),
        "top10": ([30, 300], [result["top10"], 0.875]), "top1_fp32": ([30, 300], [result["top1_fp32"], 0.625])}
    assert json.loads((tmp_path / "sweep.json").read_text()) == [result, bigger]


def test_ties_go_against_the_gold_tool():
    import numpy as np

    from nexus.bench.routing import rank_of

    assert rank_of(np.array([0.3, 0.3, 0.3]), 0) == 3 and rank_of(np.array([0.1, 0.3, 0.2]), 1) == 1


def test_missing_gold_tools_are_counted(tmp_path):
    tools = [{"name": n, "description": "same words here", "inputSchema": {"type": "object"}} for n in ("aa", "bb")]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    registry = load_registry(tmp_path / "tools.json")
    slb = SemanticLookasideBuffer(HashEmbedder(), keep_fp32=True)
    slb.sync(registry)
    queries = [{"id": "1", "query": "same words here", "tool": "aa"}, {"id": "2", "query": "same words here", "tool": "bb"},
               {"id": "3", "query": "x", "tool": "not_in_registry"}, {"id": "4", "query": "hi", "tool": None}]
    result, rows = evaluate(slb, registry, queries)
    assert [r["id"] for r in rows if r["gold"] is None] == ["3", "4"]
    assert result["n_gold_missing"] == 1 and result["n_no_tool"] == 1 and result["n_queries"] == 2


def test_data_command_and_routing_command_end_to_end(data_dir, tmp_path):
    runner = CliRunner()
    out = tmp_path / "d"
    result = runner.invoke(app, ["data", "bfcl", "--src", str(data_dir / "bfcl"), "--size", "40", "--out", str(out), "--no-tool", "5"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["bench", "routing", "--tools", str(out / "tools.json"), "--queries", str(out / "queries.jsonl"),
                                 "--scale", "2000", "--json", str(tmp_path / "r.json"), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert KEYS <= report.keys() and report["n_tools"] == 40
    # the shipped embedder on 40 BFCL tools it was not tuned on: they are among the seed-0 size-250 registry that
    # `nexus slb tune --exclude-tools` kept out of its training (models/embedder/nexus-tuning.json)
    assert report["top10"] >= report["top1"] > 0.5
    assert report["lookup_at_scale"]["n_tools"] == 2000
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert {"config", "git_revision", "machine"} <= meta.keys()
    rows = [json.loads(line) for line in (tmp_path / "run" / "per_query_40.jsonl").read_text().splitlines()]
    ranked = [r for r in rows if "rank" in r]  # the report is its per-query rows, summarised
    assert len(rows) == report["n_queries"] + report["n_no_tool"] + report["n_gold_missing"] and len(ranked) == report["n_queries"]
    assert report["top1"] == pytest.approx(sum(r["rank"] == 1 for r in ranked) / len(ranked))
    assert report["top10"] == pytest.approx(sum(r["rank"] <= 10 for r in ranked) / len(ranked))


def test_data_bfcl_builds_dev_splits_disjoint_from_the_test_split_and_from_each_other(data_dir, tmp_path):
    from nexus.datasets import overlapping, tools_fingerprint
    from nexus.registry import load_tools_file

    runner = CliRunner()
    src = ["data", "bfcl", "--src", str(data_dir / "bfcl"), "--size", "60", "--no-tool", "5"]
    for name, extra in (("T", []), ("A", ["--seed", "1", "--exclude", str(tmp_path / "T")]),
                        ("B", ["--seed", "2", "--exclude", str(tmp_path / "T"), "--exclude", str(tmp_path / "A")])):
        result = runner.invoke(app, [*src, *extra, "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    tools = {n: load_tools_file(tmp_path / n / "tools.json") for n in "TAB"}
    ids = {n: {json.loads(line)["id"] for line in (tmp_path / n / "queries.jsonl").read_text().splitlines()} for n in "TAB"}
    assert overlapping(tools_fingerprint(tools["T"] + tools["A"]), tools["B"]) == []
    assert overlapping(tools_fingerprint(tools["T"]), tools["A"]) == []
    assert not ids["B"] & (ids["T"] | ids["A"]) and not ids["A"] & ids["T"]
