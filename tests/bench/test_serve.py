"""`nexus bench serve` end to end on a tiny plan (slow: it starts real processes with the real embedder)."""

from __future__ import annotations

import json

import pytest

from nexus.bench.serve import LoadPlan, run_serve_bench

pytestmark = pytest.mark.slow


def test_bench_serve_stops_by_itself_with_figures(tmp_path):
    tools = [{"name": f"tool_{i}", "description": f"Operation {i} on resource kind {i % 7}",
              "inputSchema": {"type": "object", "properties": {}}} for i in range(20)]
    queries = [{"query": f"run operation {i} on resource kind {i % 7}", "tool": f"tool_{i}"} for i in range(20)]
    result = run_serve_bench(tools, queries, tmp_path, LoadPlan(clients=2, requests=3, route_clients=0), route=False)
    filt = result["filter"]
    assert filt["requests"] == 6 and filt["errors"] == 0 and filt["throughput_rps"] > 0
    assert filt["route_ms_p50"] > 0 and filt["peak_rss_mb"] > 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 7 and {r["phase"] for r in rows} == {"index", "filter"}
