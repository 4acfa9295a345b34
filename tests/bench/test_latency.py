"""`nexus bench latency`: BFCL answer semantics, nested cases, overflow reporting, the result shape and plot."""

from __future__ import annotations

import json
import statistics

import pytest

from nexus.bench.latency import Case, args_match, build_cases, plot_latency, run_latency, summarise, value_matches
from nexus.llm.calls import ToolCaller
from nexus.llm.scripted import ScriptedBackend
from nexus.registry import Registry, Tool
from nexus.router import ScoreGate
from nexus.slb import HashEmbedder, SemanticLookasideBuffer


@pytest.mark.parametrize("predicted, allowed, ok", [
    ({"city": "New York, NY"}, {"city": ["New York, NY", "NYC"]}, True),
    ({"city": "new york ny"}, {"city": ["New York, NY"]}, True),            # case and punctuation insensitive
    ({}, {"unit": ["", "celsius"]}, True),                                   # "" allowed: may be omitted
    ({}, {"city": ["Paris"]}, False),                                        # required and missing
    ({"city": "Paris", "x": 1}, {"city": ["Paris"]}, False),                 # unknown argument
    ({"n": 3}, {"n": [3.0]}, True),                                          # int for a float
    ({"n": 3.5}, {"n": [3]}, False),
    ({"flag": 1}, {"flag": [True]}, False),                                  # booleans are not numbers
    ({"xs": [1, 2]}, {"xs": [[1, 2]]}, True),
    ({"xs": [2, 1]}, {"xs": [[1, 2]]}, False),
    ({"opts": {"a": "x"}}, {"opts": [{"a": ["x", "y"], "b": [""]}]}, True),  # nested allowed-values map
    ({"opts": {"a": "z"}}, {"opts": [{"a": ["x"]}]}, False),
])
def test_bfcl_answer_semantics(predicted, allowed, ok):
    assert args_match(predicted, allowed) is ok


def test_value_matches_strings_only_with_strings():
    assert not value_matches(5, "5") and value_matches("Paris", "paris")


def tools(n: int) -> list[Tool]:
    topics = ["weather forecast city", "send email message", "stock price ticker", "translate text language",
              "book flight ticket", "convert currency amount", "play music song", "search web pages"]
    return [Tool(f"tool_{i}", f"{topics[i % len(topics)]} variant {i}", {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}, "f") for i in range(n)]


def queries(ids: list[int]) -> list[dict]:
    return [{"id": f"q{i}", "query": f"please {i}", "tool": f"tool_{i}", "arguments": {"q": ["hello"]}} for i in ids]


def test_cases_are_nested_and_keep_the_same_queries():
    cases = build_cases(tools(30), queries([3, 7, 11, 3]), [5, 10, 30, 50], limit=3, seed=1)
    assert [c.n_tools for c in cases] == [5, 10, 30]  # 50 > 30 tools: capped, the duplicate size skipped
    assert {q["tool"] for q in cases[0].queries} == {"tool_3", "tool_7", "tool_11"}  # distinct gold tools
    assert all(set(a.tools) <= set(b.tools) for a, b in zip(cases, cases[1:]))
    assert all(c.queries == cases[0].queries for c in cases)


def test_overflow_is_reported_per_path_never_truncated():
    case = Case(2, tuple(tools(2)), tuple(queries([0])))
    rows = [{"path": "nexus", "ttfat_ms": 100.0, "total_ms": 150.0, "context_tokens": 50, "tool_ok": True,
             "args_ok": False, "decision": "route", "full_prompt_tokens": 5000, "valid": True, "valid_ms": 150.0}]
    summary = summarise(case, rows, needed=5000, n_ctx=4096)
    for metric in ("ttfat_ms_p50", "context_tokens", "tool_accuracy", "arg_accuracy"):
        assert summary[metric]["full_cold"] == "overflow" and summary[metric]["full_warm"] == "overflow"
    assert summary["ttfat_ms_p50"]["nexus"] == 100.0 and summary["speedup_vs_full_cold"] == "overflow"
    assert summary["full_schema_tokens"] == 5000 and summary["context_reduction_vs_full"] == 0.99


def p50(rows, path, n_tools, field="ttfat_ms"):
    return statistics.median(r[field] for r in rows if r["path"] == path and r["n_tools"] == n_tools)


def test_run_latency_writes_the_specified_shape(tmp_path, saved_figures):
    case_tools, case_queries = tools(12), queries([1, 5])
    cases = build_cases(case_tools, case_queries, [4, 12], limit=2)
    backend = ScriptedBackend(arguments=['{"q": "hello"}'], choices=["tool_1"], n_ctx=4096)
    slb = SemanticLookasideBuffer(HashEmbedder())
    result = run_latency(cases, backend, slb, lambda s, r: ScoreGate(s, no_tool_below=float("-inf")), tmp_path)
    assert list(result) == ["sizes"] and [s["n_tools"] for s in result["sizes"]] == [4, 12]
    for size in result["sizes"]:
        for metric in ("ttfat_ms_p50", "context_tokens", "tool_accuracy", "arg_accuracy"):
            assert set(size[metric]) == {"nexus", "nexus_kv", "full_cold", "full_warm"}
        assert size["context_tokens"]["nexus"] < size["context_tokens"]["full_cold"]
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    for size in result["sizes"]:  # each p50 is the median of that size's raw rows, the speedup their ratio
        n = size["n_tools"]
        for path in ("nexus", "nexus_kv", "full_cold", "full_warm"):
            assert size["ttfat_ms_p50"][path] == pytest.approx(p50(rows, path, n), abs=0.01)
            assert size["context_tokens"][path] == p50(rows, path, n, "context_tokens")
        # (the ratio of the rounded p50s: cold over routed)
        assert size["speedup_vs_full_cold"] == pytest.approx(size["ttfat_ms_p50"]["full_cold"] / size["ttfat_ms_p50"]["nexus"],
                                                             abs=0.006)
    assert {r["path"] for r in rows} == {"nexus", "nexus_kv", "full_cold", "full_warm"} and len(rows) == 2 * 4 * 2
    # a backend without a KV context of its own runs nexus_kv as plain nexus: the same calls
    assert all(size["kv_same_calls"] == 1.0 for size in result["sizes"])
    # the warm baseline prefilled only the turn; the cold one the schemas and the turn, but not the few-shot header
    # (the routed path has that header warm, so the cold baseline must not pay for it either)
    cold = [r for r in rows if r["path"] == "full_cold"]
    warm = [r for r in rows if r["path"] == "full_warm"]
    assert all(w["prefilled_tokens"] < c["prefilled_tokens"] for w, c in zip(warm, cold))
    header = backend.count_tokens(ToolCaller(backend, Registry()).prompts.tools_prefix(()))  # BOS included
    assert all(c["prefilled_tokens"] == c["context_tokens"] - header for c in cold)
    # the context saving is per turn, against the real full-schema prompt of that turn
    nexus = [r for r in rows if r["path"] == "nexus" and r["n_tools"] == 12]
    assert all(r["full_prompt_tokens"] == c["context_tokens"] for r, c in zip(nexus, cold[-2:]))
    assert result["sizes"][1]["context_reduction_vs_full"] == pytest.approx(
        statistics.median(1 - r["context_tokens"] / r["full_prompt_tokens"] for r in nexus), abs=1e-4)
    assert json.loads((tmp_path / "result.json").read_text()) == result
    assert plot_latency(tmp_path).read_bytes()[:4] == b"\x89PNG"
    # the plot shows the result's figures: TTFAT p50 (left) and context tokens (right) per path, against size
    ttfat, context = saved_figures.lines("latency_vs_size.png", 0), saved_figures.lines("latency_vs_size.png", 1)
    assert set(ttfat) == {"nexus", "nexus_kv", "full_cold", "full_warm"}  # nothing overflows: no overflow marker
    for path in ttfat:
        assert ttfat[path] == ([4, 12], [s["ttfat_ms_p50"][path] for s in result["sizes"]])
        assert context[path] == ([4, 12], [s["context_tokens"][path] for s in result["sizes"]])
    assert context["full schemas needed"] == ([4, 12], [s["full_schema_tokens"] for s in result["sizes"]])


def test_baselines_get_the_same_one_repair_and_report_time_to_a_valid_call(tmp_path):
    cases = build_cases(tools(6), queries([2]), [6], limit=1)
    # every path: the first arguments are rejected (not an object), the repair is valid
    backend = ScriptedBackend(arguments=['"hello"', '{"q": "hello"}'] * 4, choices=["tool_2"])
    run_latency(cases, backend, SemanticLookasideBuffer(HashEmbedder()), lambda s, r: ScoreGate(s, no_tool_below=float("-inf")), tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert {r["path"] for r in rows} == {"nexus", "nexus_kv", "full_cold", "full_warm"}
    for row in rows:
        assert row["valid"] and row["attempts"] == 2 and row["args_ok"], row
        # TTFAT of the call returned (the repair's) comes after the first attempt's; the valid call after both
        assert row["ttfat_ms"] > row["ttfat_first_ms"] and row["valid_ms"] >= row["ttfat_ms"]


def test_overflowing_sizes_skip_the_full_paths(tmp_path, saved_figures):
    cases = build_cases(tools(40), queries([1]), [40], limit=1)
    backend = ScriptedBackend(arguments=['{"q": "hello"}'], n_ctx=600)  # the header fits, 40 full schemas do not
    result = run_latency(cases, backend, SemanticLookasideBuffer(HashEmbedder()), lambda s, r: ScoreGate(s, no_tool_below=float("-inf")), tmp_path,
                         max_arg_tokens=32)
    size = result["sizes"][0]
    assert size["ttfat_ms_p50"]["full_cold"] == "overflow" and size["full_schema_tokens"] > 600
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert {r["path"] for r in rows} == {"nexus", "nexus_kv"}
    assert size["ttfat_ms_p50"]["nexus"] == pytest.approx(p50(rows, "nexus", 40), abs=0.01)
    # an overflowing size still plots: its full-schema points are left out, the overflow is marked at its size
    plot = plot_latency(tmp_path)
    assert plot.read_bytes()[:4] == b"\x89PNG"
    ttfat = saved_figures.lines("latency_vs_size.png", 0)
    assert ttfat == {"nexus": ([40], [size["ttfat_ms_p50"]["nexus"]]), "nexus_kv": ([40], [size["ttfat_ms_p50"]["nexus_kv"]]),
                     "overflow (n_ctx=600)": ([40, 40], [0, 1])}


def test_only_the_requested_paths_run(tmp_path, saved_figures):
    cases = build_cases(tools(8), queries([2]), [8], limit=1)
    backend = ScriptedBackend(arguments=['{"q": "hello"}'])
    result = run_latency(cases, backend, SemanticLookasideBuffer(HashEmbedder()), lambda s, r: ScoreGate(s, no_tool_below=float("-inf")), tmp_path,
                         paths=("nexus", "full_warm"))
    size = result["sizes"][0]
    assert size["ttfat_ms_p50"]["full_cold"] is None and size["speedup_vs_full_cold"] is None
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert {r["path"] for r in rows} == {"nexus", "full_warm"}
    assert size["ttfat_ms_p50"]["full_warm"] == pytest.approx(p50(rows, "full_warm", 8), abs=0.01)
    with pytest.raises(ValueError, match="must include 'nexus'"):
        run_latency(cases, backend, SemanticLookasideBuffer(HashEmbedder()), lambda s, r: ScoreGate(s, no_tool_below=float("-inf")), tmp_path,
                    paths=("full_cold",))
    assert plot_latency(tmp_path).read_bytes()[:4] == b"\x89PNG"  # a size without full-schema points still plots
    assert set(saved_figures.lines("latency_vs_size.png", 0)) == {"nexus", "full_warm"}  # only the paths that ran


def test_a_small_size_pools_draws_until_it_has_the_turns_asked_for(tmp_path):
    from nexus.bench.latency import pooled_cases

    cases = pooled_cases(tools(12), queries(list(range(12))), [4, 12], limit=8)
    assert [(c.n_tools, len(c.queries)) for c in cases] == [(4, 4), (4, 4), (12, 8)]
    first, second = ({q["id"] for q in c.queries} for c in cases[:2])
    assert not first & second  # never the same turn twice
    backend = ScriptedBackend(arguments=['{"q": "hello"}'])
    result = run_latency(cases, backend, SemanticLookasideBuffer(HashEmbedder()),
                         lambda s, r: ScoreGate(s, no_tool_below=float("-inf")), tmp_path, paths=("nexus", "full_warm"))
    assert [(s["n_tools"], s["n_queries"]) for s in result["sizes"]] == [(4, 8), (12, 8)]
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert sorted({(r["n_tools"], r["draw"]) for r in rows}) == [(4, 0), (4, 1), (12, 0)]
