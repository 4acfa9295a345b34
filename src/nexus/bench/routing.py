"""`nexus bench routing`: accuracy and latency of the SLB (and optionally the gate) on labelled queries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nexus.bench.runfolder import percentile, write_jsonl
from nexus.registry import Registry, load_registry
from nexus.slb import SemanticLookasideBuffer
from nexus.slb.quantize import top_k


def rank_of(scores: np.ndarray, index: int) -> int:
    """1-based rank of `index`; ties are broken against it (pessimistic): a tool tied with the gold one ranks first.

    >>> rank_of(np.array([0.5, 0.9, 0.9, 0.1]), 2)
    2
    >>> rank_of(np.array([0.9, 0.9]), 0)
    2
    """
    return int(np.sum(scores >= scores[index]))


def evaluate(slb: SemanticLookasideBuffer, registry: Registry, queries: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict]]:
    """Rank every relevant query against the whole table (int8 and fp32), timing embed and lookup."""
    mapping = registry.name_index()
    position = {key: i for i, key in enumerate(slb.keys)}
    rows, embed_ms, lookup_ms = [], [], []
    for q in queries:
        gold = mapping.get(q["tool"]) if q.get("tool") else None
        t0 = time.perf_counter()
        vec = slb.embedder.embed([q["query"]])[0]
        t1 = time.perf_counter()
        fused = slb.scores(q["query"], vec)  # the lookup: fused INT8 + lexical scores and an exact top-10
        top10 = top_k(fused, 10)
        t2 = time.perf_counter()
        embed_ms.append((t1 - t0) * 1000)
        lookup_ms.append((t2 - t1) * 1000)
        row = {"id": q.get("id"), "gold": gold, "top10": [slb.keys[i] for i in top10], "embed_ms": embed_ms[-1], "lookup_ms": lookup_ms[-1]}
        if gold is not None:
            row["rank"] = rank_of(fused, position[gold])
            row["rank_fp32"] = rank_of(slb.scores(q["query"], vec, precision="fp32"), position[gold]) if slb.fp32 is not None else None
        rows.append(row)
    ranked = [r for r in rows if "rank" in r]
    ranks = np.array([r["rank"] for r in ranked]) if ranked else np.zeros(0)
    result = {
        "n_tools": len(slb), "n_queries": len(ranked), "n_no_tool": sum(1 for q in queries if not q.get("tool")),
        "n_gold_missing": sum(1 for r in rows if r["gold"] is None) - sum(1 for q in queries if not q.get("tool")),
        **{f"top{k}": float(np.mean(ranks <= k)) if ranked else float("nan") for k in (1, 3, 5, 10)},
        "mrr": float(np.mean(1.0 / ranks)) if ranked else float("nan"),
        "lookup_ms_p50": percentile(lookup_ms, 50), "lookup_ms_p99": percentile(lookup_ms, 99),
        "embed_ms_p50": percentile(embed_ms, 50), "embed_ms_p99": percentile(embed_ms, 99),
        "index_bytes_int8": slb.nbytes, "index_bytes_fp32": int(len(slb) * slb.embedder.dim * 4),
    }
    if slb.fp32 is not None and ranked:
        result["top1_fp32"] = float(np.mean([r["rank_fp32"] == 1 for r in ranked]))
    return result, rows


def lookup_at_scale(slb: SemanticLookasideBuffer, queries: list[dict[str, Any]], n: int, limit: int = 100) -> dict[str, float]:
    """Lookup latency on a table tiled to `n` rows (copies of the real rows: same kernel, same text sizes)."""
    reps = -(-n // max(len(slb), 1))
    big = SemanticLookasideBuffer(slb.embedder, slb.weights)
    big.codes = np.ascontiguousarray(np.tile(slb.codes, (reps, 1))[:n])
    big.scales = np.tile(slb.scales, reps)[:n]
    big.keys = [f"{k}#{i // len(slb)}" for i, k in enumerate((slb.keys * reps)[:n])]
    big.names = (slb.names * reps)[:n]
    big.texts = (slb.texts * reps)[:n]
    big._lexical = big._lexical_index()
    sample = queries[:limit]
    vecs = slb.embedder.embed([q["query"] for q in sample])
    times = []
    for q, vec in zip(sample, vecs):
        t0 = time.perf_counter()
        big.search(q["query"], k=10, query_vec=vec)
        times.append((time.perf_counter() - t0) * 1000)
    return {"n_tools": n, "lookup_ms_p50": percentile(times, 50), "lookup_ms_p99": percentile(times, 99)}


def build_slb(tools: Path | Sequence[Path], nexus: Any) -> tuple[Registry, SemanticLookasideBuffer, float]:
    """The registry of `tools` and its index (with fp32 rows kept for the INT8-vs-fp32 comparison), built with the
    facade's embedder and weights; returns the build time too."""
    registry = load_registry(tools)
    slb = nexus.new_slb(keep_fp32=True)
    t0 = time.perf_counter()
    slb.sync(registry)
    return registry, slb, time.perf_counter() - t0


def run_routing(tools: Path | Sequence[Path], queries_path: Path, nexus: Any, run_dir: Path,
                gate: bool = False, allow_overlap: bool = False) -> tuple[dict[str, Any], SemanticLookasideBuffer, list[dict]]:
    """Evaluate one (tools, queries) pair with the facade's parts (`nexus.Nexus`: embedder, weights and, with
    `gate`, its trained gate, refused when it trained on these tools unless `allow_overlap`); return the result and the built SLB and queries for reuse."""
    from nexus.datasets import read_query_records as read_queries

    registry, slb, build_s = build_slb(tools, nexus)
    queries = read_queries(queries_path)
    result, rows = evaluate(slb, registry, queries)
    result["build_s"] = build_s
    write_jsonl(run_dir / f"per_query_{len(slb)}.jsonl", rows)
    if gate:
        from nexus.gate.bench import check_disjoint, gate_metrics

        sub_dir = run_dir / f"gate_{len(slb)}"
        sub_dir.mkdir(exist_ok=True)
        boundary = nexus.make_gate(slb, registry)
        result["overlap_with_training"] = len(check_disjoint(boundary.model, registry, allow_overlap))
        result.update(gate_metrics(slb, registry, queries, boundary, sub_dir))
    return result, slb, queries


def plot_sweep(run_dir: Path, results: list[dict[str, Any]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["n_tools"] for r in results]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key in ("top1", "top5", "top10", "top1_fp32", "top1_gate"):
        if all(key in r for r in results):
            ax.plot(sizes, [r[key] for r in results], marker="o", label=key)
    ax.set_xscale("log")
    ax.set_xlabel("registry size (tools)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("Routing accuracy vs registry size")
    path = run_dir / "accuracy_vs_size.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    (run_dir / "sweep.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return path
