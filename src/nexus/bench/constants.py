"""`nexus bench constants`: choose the SLB's fusion constants and the fallback `ScoreGate`'s margins on a dev split.

Every constant that shapes a reported figure is chosen here on a *dev* registry — another seed, tools disjoint
from the test registry (`nexus data bfcl --seed 1 --exclude TEST`) — and only then measured on the test
registry. Objectives (fixed before looking at any result):

- `lexical_weight`, `name_bonus`: the highest top-1 on the dev turns, ties broken by MRR, then by the smaller
  lexical weight (less lexical influence generalises to registries whose names and words differ), then by the
  larger name bonus (BFCL turns never name a tool, so the dev split has no evidence on it either way; a user who
  names a tool should get it);
- `ScoreGate.route_margin`: the smallest score margin whose ROUTEs are right on >= `route_precision` of the dev
  turns it routes — no-tool turns routed count as errors;
- `ScoreGate.no_tool_below`: the largest top score under which NO_TOOL is right on >= `no_tool_precision` of
  the dev turns it fires on; `-inf` (never) when no value reaches it.

>>> pick_threshold([0.1, 0.2, 0.3, 0.4], [False, True, True, True], 0.9, above=True)
0.2
>>> pick_threshold([0.1, 0.2], [False, False], 0.9, above=True) == float("inf")
True
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from nexus.bench.routing import rank_of
from nexus.registry import Registry
from nexus.slb.index import HybridWeights, SemanticLookasideBuffer

LEXICAL_GRID = (0.0, 0.1, 0.2, 0.3, 0.5)
NAME_BONUS_GRID = (0.0, 0.5, 1.0)


def pick_threshold(values: Sequence[float], correct: Sequence[bool], precision: float, above: bool) -> float:
    """The threshold t that fires on the most turns (value >= t when `above`, value < t otherwise) while the fired
    turns stay at least `precision` correct; +inf (`above`) or -inf (never fires) when no t reaches it."""
    order = np.argsort(-np.asarray(values)) if above else np.argsort(np.asarray(values))
    vals = np.asarray(values, dtype=float)[order]
    ok = np.asarray(correct, dtype=float)[order]
    hits = np.cumsum(ok) / np.arange(1, len(ok) + 1)
    best = math.inf if above else -math.inf
    for i in range(len(vals)):
        # a threshold can only sit between distinct values: fire on all turns tied with vals[i]
        if i + 1 < len(vals) and vals[i + 1] == vals[i]:
            continue
        if hits[i] >= precision:
            best = float(vals[i]) if above else float(np.nextafter(vals[i], math.inf))
    return best


def fusion_grid(slb: SemanticLookasideBuffer, registry: Registry, queries: Sequence[dict[str, Any]],
                lexical: Sequence[float] = LEXICAL_GRID, bonus: Sequence[float] = NAME_BONUS_GRID) -> list[dict[str, Any]]:
    """top-1 / top-10 / MRR of every (lexical_weight, name_bonus) pair on the relevant dev turns."""
    mapping = registry.name_index()
    position = {key: i for i, key in enumerate(slb.keys)}
    relevant = [(q, position[mapping[q["tool"]]]) for q in queries if q.get("tool") and q["tool"] in mapping]
    vecs = slb.embedder.embed([q["query"] for q, _ in relevant]) if relevant else []
    saved, rows = slb.weights, []
    try:
        for w in lexical:
            for b in bonus:
                slb.weights = HybridWeights(w, b)
                ranks = np.array([rank_of(slb.scores(q["query"], vec), gold) for (q, gold), vec in zip(relevant, vecs)])
                rows.append({"lexical_weight": w, "name_bonus": b, "top1": float(np.mean(ranks == 1)),
                             "top10": float(np.mean(ranks <= 10)), "mrr": float(np.mean(1 / ranks)), "n": len(ranks)})
    finally:
        slb.weights = saved
    return rows


def best_fusion(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return max(rows, key=lambda r: (round(r["top1"], 6), round(r["mrr"], 6), -r["lexical_weight"], r["name_bonus"]))


def score_gate_margins(slb: SemanticLookasideBuffer, registry: Registry, queries: Sequence[dict[str, Any]],
                       route_precision: float = 0.95, no_tool_precision: float = 0.9) -> dict[str, Any]:
    """The fallback ScoreGate's route margin and no-tool floor from the dev turns (relevant and no-tool)."""
    mapping = registry.name_index()
    margins, routed_ok, tops, no_tool = [], [], [], []
    for q in queries:
        if q.get("tool") and q["tool"] not in mapping:
            continue
        hits = slb.search(q["query"], k=2)
        if not hits:
            continue
        margins.append(hits[0].score - (hits[1].score if len(hits) > 1 else -math.inf))
        routed_ok.append(bool(q.get("tool")) and hits[0].key == mapping[q["tool"]])
        tops.append(hits[0].score)
        no_tool.append(not q.get("tool"))
    route_margin = pick_threshold(margins, routed_ok, route_precision, above=True)
    no_tool_below = pick_threshold(tops, no_tool, no_tool_precision, above=False)
    fired = [m >= route_margin for m in margins]
    return {"route_margin": route_margin, "no_tool_below": no_tool_below, "route_precision": route_precision,
            "no_tool_precision": no_tool_precision, "dev_route_coverage": float(np.mean(fired)) if fired else 0.0,
            "dev_no_tool_recall": float(np.mean([t < no_tool_below for t, n in zip(tops, no_tool) if n]))
            if any(no_tool) else None, "n": len(margins)}
