"""`nexus bench serve` end to end on a tiny plan (slow: it starts real processes with the real embedder)."""

from __future__ import annotations

import json

import pytest

from nexus.bench.runfolder import percentile
from nexus.bench.serve import LoadPlan, run_serve_bench

pytestmark = pytest.mark.slow


def test_bench_serve_stops_by_itself_with_figures(tmp_path):
    tools = [{"name": f"tool_{i}", "description": f"Operation {i} on resource kind {i % 7}",
              "inputSchema": {"type": "object", "properties": {}}} for i in range(20)]
    queries = [{"query": f"run operation {i} on resource kind {i % 7}", "tool": f"tool_{i}"} for i in range(20)]
    result = run_serve_bench(tools, queries, tmp_path, LoadPlan(clients=2, requests=3, route_clients=0), route=False)
    filt = result["filter"]
    assert filt["requests"] == 6 and filt["errors"] == 0 and sum(filt["decisions"].values()) == 6
    assert filt["throughput_rps"] == pytest.approx(6 / filt["seconds"], rel=0.05)  # seconds is shown rounded to 0.01
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 7 and {r["phase"] for r in rows} == {"index", "filter"}
    load = [r for r in rows if r["phase"] == "filter"]
    assert filt["route_ms_p50"] == round(percentile([r["route_ms"] for r in load], 50), 2)
    # each request names its tool's own words: the proxy forwards it every time, and the proxy's memory is read
    assert filt["gold_kept_share"] == 1.0 and filt["peak_rss_mb"] >= filt["rss_mb"] > 100
