"""Measuring the gate: the metrics `nexus bench routing --gate` adds, its plots and multi-call recall (the BFCL
training pool and multi-call turns are built in `nexus.datasets.bfcl`).

`gate_metrics(slb, registry, queries, gate, run_dir)` returns `top1_gate`, `coverage` (share of relevant
turns decided ROUTE), `selective_accuracy` (correct ROUTEs / all ROUTEs over relevant *and* no-tool turns: a
ROUTE on a turn that needs no tool is an error), `route_on_no_tool`, `no_tool_precision` / `no_tool_recall`,
the actions per class, `ece` (of p_top1 on relevant turns, 15 bins), `no_tool_auroc` (p_no_tool, `tool: null`
turns vs relevant ones), `gate_ms_p50`, `gate_ms_p99`, and more. A query whose gold tool is not in the registry
is counted (`gate_n_gold_missing`, with its ids) and scored as a wrong top-1 and a wrong ROUTE, never dropped.
Raw rows go to `run_dir/gate_rows.jsonl`, plots to `risk_coverage.png` and `reliability.png`.
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nexus.gate.calibration import auroc, ece_if_calibrated, expected_calibration_error, reliability_bins, risk_coverage
from nexus.gate.decision import Action
from nexus.gate.gate import BoundaryGate
from nexus.gate.model import GateModel, GateModelError
from nexus.registry import Registry, Tool
from nexus.slb.index import SemanticLookasideBuffer

log = logging.getLogger(__name__)


def load_gate(path: str | Path | None = None) -> GateModel:
    """A saved gate model; `None` means the one in force (`Settings.gate_dir()`: NEXUS_GATE_MODEL, the cache's
    default, or the gate shipped in models/gate)."""
    if path is None:
        from nexus.config import Settings

        path = Settings().gate_dir()
        if not path.exists():
            raise GateModelError(f"no gate model at {path}; train one with `nexus gate train` or pass --gate-model")
    return GateModel.load(path)


class OverlapError(GateModelError):
    """The gate was trained on tools of the registry it is asked to be measured on."""


def check_disjoint(model: GateModel, registry: Registry, allow_overlap: bool = False) -> list[str]:
    """Names of the registry's tools the gate was trained on (by name, SGD family or normalised description).

    Measuring a gate on tools it trained on flatters it, so this raises `OverlapError` unless `allow_overlap`
    (then it logs a warning and the result carries the overlap). A gate without a fingerprint is reported too."""
    training = model.header.training or {}
    fingerprint = training.get("tools_fingerprint")
    if fingerprint is None:
        log.warning("the gate model records no training-tools fingerprint: tool-disjointness cannot be checked")
        return []
    from nexus.datasets import overlapping

    tools = [registry.get(k) for k in registry.keys()]
    dev = (training.get("calibration_dev") or {}).get("tools_fingerprint")
    shared = sorted(set(overlapping(fingerprint, tools)) | set(overlapping(dev, tools) if dev else ()))
    if shared:
        what = (f"{len(shared)} of the {len(registry)} evaluated tools were in the gate's training data or its "
                f"calibration dev registries (by name, SGD family or description), e.g. {', '.join(shared[:5])}")
        if not allow_overlap:
            raise OverlapError(f"{what}; its figures would flatter it. Train a gate with these tools excluded "
                               f"(`nexus gate train --exclude <tools.json>`), or pass --allow-overlap to measure anyway")
        log.warning("%s: the figures are NOT tool-disjoint", what)
    return shared


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


def gate_metrics(slb: SemanticLookasideBuffer, registry: Registry, queries: Sequence[dict[str, Any]], gate: Any,
                 run_dir: str | Path | None = None) -> dict[str, Any]:
    """Decide every query with the gate and measure ranking, calibration, selectivity, no-tool and latency."""
    if isinstance(gate, GateModel):
        from nexus.config import Settings

        gate = BoundaryGate.from_settings(slb, registry, gate, Settings().gate)
    mapping = registry.name_index()
    rows = []
    for q in queries:
        name = q.get("tool")
        gold = mapping.get(name) if name else None
        history = q.get("history") or ()
        hits = slb.search(q["query"], k=gate.k)
        decision = gate.decide(q["query"], history=history, hits=hits)
        keys = [h.key for h in decision.candidates]
        rows.append({
            # a gold tool missing from the registry keeps its name: it can never be matched, so it counts as wrong
            "id": q.get("id"), "gold": gold or name, "gold_missing": bool(name and gold is None),
            "action": decision.action.value, "top1": keys[0] if keys else None,
            "slb_top1": hits[0].key if hits else None, "candidates": keys, "p_top1": decision.p_top1,
            "p_no_tool": decision.p_no_tool, "gate_ms": decision.gate_ms,
            "in_topk": bool(gold and gold in {h.key for h in hits}),
        })
    rel = [r for r in rows if r["gold"]]
    nt = [r for r in rows if not r["gold"]]
    missing = [r["id"] for r in rel if r["gold_missing"]]
    if missing:
        log.warning("%d queries name a gold tool missing from the registry; counted as wrong", len(missing))
    correct = np.array([r["top1"] == r["gold"] and not r["gold_missing"] for r in rel], dtype=float)
    p_top1 = np.array([r["p_top1"] for r in rel])
    routed = np.array([r["action"] == Action.ROUTE.value for r in rel], dtype=bool)
    routed_nt = sum(1 for r in nt if r["action"] == Action.ROUTE.value)
    n_routed = int(routed.sum()) + routed_nt
    p_nt = np.array([r["p_no_tool"] for r in rows])
    is_nt = np.array([not r["gold"] for r in rows])
    shortlisted = [r for r in rel if r["action"] == Action.SHORTLIST.value]
    decided_nt = [r for r in rows if r["action"] == Action.NO_TOOL.value]
    ms = [r["gate_ms"] for r in rows]
    from nexus.datasets import query_hash

    seen = set((gate.model.header.training or {}).get("queries_fingerprint") or ())
    result: dict[str, Any] = {
        "gate_n_queries_seen_in_training": sum(1 for q in queries if query_hash(q["query"]) in seen),
        "gate_model": str(getattr(gate.model.scorer, "path", gate.model.header.base_model)),
        "gate_n_relevant": len(rel), "gate_n_no_tool": len(nt), "gate_n_gold_missing": len(missing),
        "gate_gold_missing_ids": missing[:50],
        "top1_slb": float(np.mean([r["slb_top1"] == r["gold"] for r in rel])) if rel else float("nan"),
        "top1_gate": float(correct.mean()) if rel else float("nan"),
        "topk_slb": float(np.mean([r["in_topk"] for r in rel])) if rel else float("nan"),
        "coverage": float(routed.mean()) if rel else float("nan"),
        # correct ROUTEs / all ROUTEs, relevant and no-tool turns together (a ROUTE on a no-tool turn is wrong)
        "selective_accuracy": float(correct[routed].sum() / n_routed) if n_routed else float("nan"),
        "selective_accuracy_relevant_only": float(correct[routed].mean()) if routed.any() else float("nan"),
        "route_on_no_tool": routed_nt,
        "ece": expected_calibration_error(p_top1, correct) if rel else float("nan"),
        "no_tool_auroc": auroc(p_nt, is_nt) if nt and rel else float("nan"),
        "ece_no_tool": expected_calibration_error(p_nt, is_nt) if rows else float("nan"),
        "no_tool_precision": float(np.mean([not r["gold"] for r in decided_nt])) if decided_nt else float("nan"),
        "no_tool_recall": float(np.mean([r["action"] == Action.NO_TOOL.value for r in nt])) if nt else float("nan"),
        "shortlist_recall": float(np.mean([r["gold"] in r["candidates"] for r in shortlisted])) if shortlisted else float("nan"),
        "actions_relevant": {a.value: sum(1 for r in rel if r["action"] == a.value) for a in Action},
        "actions_no_tool": {a.value: sum(1 for r in nt if r["action"] == a.value) for a in Action},
        "thresholds": gate.model.calibration.thresholds.to_dict(),
        "gate_ms_p50": _pct(ms, 50), "gate_ms_p99": _pct(ms, 99),
    }
    if rel:
        result["ece_if_calibrated_p50"], result["ece_if_calibrated_p95"] = ece_if_calibrated(p_top1)
        cov, risk, _ = risk_coverage(p_top1, correct)
        result["risk_at_coverage_0.8"] = float(risk[max(int(np.ceil(0.8 * len(rel))) - 1, 0)])
    if run_dir is not None:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "gate_rows.jsonl", "w", encoding="utf-8") as handle:
            for r in rows:
                handle.write(json.dumps(r, ensure_ascii=False) + "\n")
        if rel:
            result["plots"] = [str(plot_risk_coverage(run_dir, p_top1, correct, routed)),
                               str(plot_reliability(run_dir, p_top1, correct))]
        (run_dir / "gate_result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


# -- plots (matplotlib Agg, drawn from the rows above) -----------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_risk_coverage(run_dir: Path, p_top1: np.ndarray, correct: np.ndarray, routed: np.ndarray) -> Path:
    plt = _pyplot()
    cov, risk, _ = risk_coverage(p_top1, correct)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(cov, risk, label="gate (sorted by p_top1)")
    ax.axhline(1 - correct.mean(), color="grey", ls=":", label="route everything")
    if routed.any():
        ax.scatter([routed.mean()], [1 - correct[routed].mean()], color="red", zorder=3, label="operating point (ROUTE)")
    ax.set_xlabel("coverage (share of relevant turns routed)")
    ax.set_ylabel("selective risk (error rate of routed)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, max(0.05, float(1 - correct.mean()) * 1.1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Risk-coverage of the boundary gate")
    path = run_dir / "risk_coverage.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_reliability(run_dir: Path, p: np.ndarray, y: np.ndarray, name: str = "reliability.png", what: str = "p(top-1 correct)") -> Path:
    plt = _pyplot()
    counts, conf, acc = reliability_bins(p, y)
    edges = np.linspace(0, 1, len(counts) + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    used = counts > 0
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(5, 5.5), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    ax.bar(centres[used], acc[used], width=1 / len(counts), edgecolor="k", alpha=0.7, label="accuracy")
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
    ax.scatter(conf[used], acc[used], color="red", s=12, zorder=3, label="(bin mean confidence, accuracy)")
    ax.set_ylabel("observed accuracy")
    ax.set_title(f"Reliability of {what}  (ECE {expected_calibration_error(p, y):.3f}, 15 bins)")
    ax.legend(fontsize=8)
    ax2.bar(centres, counts, width=1 / len(counts), edgecolor="k")
    ax2.set_yscale("log")
    ax2.set_xlabel("predicted probability")
    ax2.set_ylabel("turns")
    path = run_dir / name
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# -- multi-call turns ------------------------------------------------------------------------------------
def multi_call_metrics(gate: BoundaryGate, turns: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
    """Complete-set recall for turns that need several tools: is every needed tool in what the LLM sees?"""
    mapping = gate.registry.name_index()
    rows = []
    for query, names in turns:
        gold = {mapping.get(n) for n in names}
        if None in gold or len(gold) < 2:
            continue
        hits = gate.slb.search(query, k=gate.k)
        d = gate.decide(query, hits=hits)
        seen = {h.key for h in d.candidates}
        rows.append({"action": d.action.value, "slb": gold <= {h.key for h in hits}, "gate": gold <= seen,
                     "gate_top5": gold <= {h.key for h in d.candidates[:5]}, "size": len(gold),
                     "visible": gold <= seen if d.action in (Action.SHORTLIST, Action.FALLBACK) else d.action is Action.FALLBACK})
    n = len(rows)
    return {
        "multi_n_turns": n,
        "set_recall_slb_top10": float(np.mean([r["slb"] for r in rows])) if n else float("nan"),
        "set_recall_gate_candidates": float(np.mean([r["gate"] for r in rows])) if n else float("nan"),
        "set_recall_gate_top5": float(np.mean([r["gate_top5"] for r in rows])) if n else float("nan"),
        "set_recall_decided": float(np.mean([r["visible"] for r in rows])) if n else float("nan"),
        "multi_routed_share": float(np.mean([r["action"] == Action.ROUTE.value for r in rows])) if n else float("nan"),
        "multi_actions": dict(Counter(r["action"] for r in rows)),
    }


def disjoint_multi_call(tools: Sequence[Tool], turns: Sequence[tuple[str, Sequence[str]]], fingerprint: dict | None
                        ) -> tuple[list[Tool], list[tuple[str, list[str]]], dict]:
    """Multi-call turns made tool-disjoint from a gate's training data: a turn needing a tool the gate trained
    on (by name, SGD family or description) is dropped, and so is every such tool from the registry."""
    from nexus.datasets import overlapping

    seen = set(overlapping(fingerprint, tools)) if fingerprint else set()
    kept_turns = [(q, list(names)) for q, names in turns if not seen & set(names)]
    kept_tools = [t for t in tools if t.name not in seen]
    return kept_tools, kept_turns, {"multi_overlap_tools": len(seen), "multi_dropped_turns": len(turns) - len(kept_turns)}


def split_half(turns: Sequence, part: str, seed: int = 0) -> list:
    """A fixed half of `turns` ("dev" or "test", by a seeded shuffle): choose rules on dev, report test."""
    if part not in ("dev", "test", "all"):
        raise ValueError(f"part must be dev, test or all, not {part!r}")
    if part == "all":
        return list(turns)
    order = list(range(len(turns)))
    random.Random(seed).shuffle(order)
    half = set(order[: len(order) // 2])
    return [t for i, t in enumerate(turns) if (i in half) == (part == "dev")]
