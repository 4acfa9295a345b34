"""From raw scores to the gate's calibrated probabilities and thresholds (pure numpy).

Per turn the gate has, for each of the SLB's top-k candidates, a cross-encoder logit and the SLB's
dense and lexical channels. `GateCalibration` turns them into
- a fused ranking score  s_i = w . [ce_i, dense_i, lexical_i]  (conditional logit, i.e. a temperature
  per channel, fitted so that softmax(s) is the probability that candidate i is the right tool),
- p_top1 = P(the top candidate is right | a tool applies): Platt scaling of [logit max softmax, top logit],
- p_no_tool = P(no tool applies): logistic on the best logit and the SLB's best channels,
- p_shortlist = P(the right tool is among the top `shortlist_k` | a tool applies): logistic on the probability
  mass those candidates hold, the top probability and the registry size; FALLBACK (all schemas) is decided on it,
  from the SHORTLIST risk target (p_no_tool is a poor proxy for "the shortlist misses the tool": it sent 83 % of
  relevant test turns to FALLBACK),
- relevance_i = P(candidate i is needed): Platt scaling of ce_i (two needed tools = a multi-call turn),
and holds the decision thresholds derived from target risks on the calibration split.

>>> cal = GateCalibration.identity()
>>> out = cal.apply(np.array([3.0, 0.0]), np.array([0.5, 0.2]), np.array([0.1, 0.0]))
>>> out.order.tolist(), round(float(out.probs[0]), 3)
([0, 1], 0.953)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from nexus.gate.calibration import (
    LogisticMap, auroc, expected_calibration_error, fit_conditional_logit, fit_logistic, logit, softmax,
    threshold_for_risk,
)


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds (see `policy.choose_action`); inf disables an action."""

    route: float = 0.95        # route_confidence = p_top1 * (1 - p_no_tool) at or above: ROUTE
    no_tool: float = 0.9       # p_no_tool at or above: NO_TOOL
    fallback: float = 0.5      # p_no_tool at or above (not routed, below no_tool): FALLBACK, not SHORTLIST
    multi: float = 0.5         # relevance of the 2nd candidate at or above: a multi-call turn, never ROUTE
    shortlist: float = 0.0     # p_shortlist below (not routed, not no-tool): FALLBACK, not SHORTLIST

    def to_dict(self) -> dict:
        return {k: (None if v == float("inf") else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Thresholds":
        d = {"shortlist": 0.0, **d}  # absent from gates saved before p_shortlist existed: 0 keeps their decisions
        return cls(**{k: float("inf") if d.get(k) is None else float(d[k]) for k in ("route", "no_tool", "fallback", "multi", "shortlist")})


@dataclass(frozen=True)
class TurnProbabilities:
    order: np.ndarray          # candidate indices, best first
    fused: np.ndarray          # fused score per candidate (input order)
    probs: np.ndarray          # softmax of fused, in `order`
    relevance: np.ndarray      # P(candidate needed), in `order`
    p_top1: float
    p_no_tool: float
    p_shortlist: float = 1.0   # P(right tool among the top shortlist_k); 1.0 for a calibration without that map


# Inputs of the p_top1 map, by name. The registry size matters: the same score margin is worth less among
# 1,000 tools than among 100 (more near-duplicates), so calibration sees several registry sizes.
TOP1_INPUTS = {
    "logit_pmax": lambda probs, ce_top, n_tools: float(logit(probs[0])),
    "ce_top": lambda probs, ce_top, n_tools: float(ce_top),
    "log_n_tools": lambda probs, ce_top, n_tools: float(np.log(max(n_tools, 1))),
}
DEFAULT_TOP1_INPUTS = ("logit_pmax", "ce_top", "log_n_tools")
_LEGACY_TOP1_INPUTS = ("logit_pmax", "ce_top")


# Inputs of the p_shortlist map: how much of the softmax the top `shortlist_k` hold, how peaked the top is, and
# the registry size (more near-duplicates, more misses).
SHORTLIST_INPUTS = {
    "logit_mass": lambda probs, k, n_tools: float(logit(probs[:k].sum())),
    "logit_pmax": lambda probs, k, n_tools: float(logit(probs[0])),
    "log_n_tools": lambda probs, k, n_tools: float(np.log(max(n_tools, 1))),
}
DEFAULT_SHORTLIST_INPUTS = ("logit_mass", "logit_pmax", "log_n_tools")


def shortlist_features(probs_sorted: np.ndarray, k: int, n_tools: int = 0,
                       inputs: Sequence[str] = DEFAULT_SHORTLIST_INPUTS) -> np.ndarray:
    return np.array([SHORTLIST_INPUTS[name](probs_sorted, k, n_tools) for name in inputs], dtype=np.float64)


def top1_features(probs_sorted: np.ndarray, ce_top: float, n_tools: int = 0,
                  inputs: Sequence[str] = _LEGACY_TOP1_INPUTS) -> np.ndarray:
    return np.array([TOP1_INPUTS[name](probs_sorted, ce_top, n_tools) for name in inputs], dtype=np.float64)


# Inputs the no-tool model may read, by name (the calibration records which it uses). The lexical channel
# is left out by default: BFCL `irrelevance` pairs each turn with deliberately word-similar functions, so
# on that training data lexical overlap *predicts* "no tool" — a shortcut that reverses on other turns.
NO_TOOL_INPUTS = {
    "max_ce": lambda ce, dense, lexical, n_tools: ce.max(),
    "max_dense": lambda ce, dense, lexical, n_tools: dense.max(),
    "max_fused": lambda ce, dense, lexical, n_tools: (dense + lexical).max(),
    "max_lexical": lambda ce, dense, lexical, n_tools: lexical.max(),
    "log_n_tools": lambda ce, dense, lexical, n_tools: np.log(max(n_tools, 1)),
}
DEFAULT_NO_TOOL_INPUTS = ("max_ce", "max_dense", "log_n_tools")
_LEGACY_NO_TOOL_INPUTS = ("max_ce", "max_dense", "max_fused", "max_lexical")


def no_tool_features(ce: np.ndarray, dense: np.ndarray, lexical: np.ndarray,
                     inputs: Sequence[str] = DEFAULT_NO_TOOL_INPUTS, n_tools: int = 0) -> np.ndarray:
    return np.array([NO_TOOL_INPUTS[name](ce, dense, lexical, n_tools) for name in inputs], dtype=np.float64)


@dataclass(frozen=True)
class GateCalibration:
    fusion: tuple[float, float, float]
    top1: LogisticMap
    no_tool: LogisticMap
    relevance: LogisticMap
    thresholds: Thresholds = field(default_factory=Thresholds)
    report: dict = field(default_factory=dict, compare=False)   # calibration-split metrics, for the header
    no_tool_inputs: tuple[str, ...] = DEFAULT_NO_TOOL_INPUTS
    top1_inputs: tuple[str, ...] = _LEGACY_TOP1_INPUTS
    # registry sizes calibration saw: a size outside is clamped into it, so the maps never extrapolate
    # (a gate calibrated on 100-355 tools read 1,000 as "far more no-tool-like" and said NO_TOOL to 40% of turns)
    n_tools_range: tuple[int, int] | None = None
    # P(right tool among the top `shortlist_k`); None in gates calibrated before it existed (p_shortlist = 1)
    shortlist: LogisticMap | None = None
    shortlist_inputs: tuple[str, ...] = DEFAULT_SHORTLIST_INPUTS
    shortlist_k: int = 5

    @classmethod
    def identity(cls) -> "GateCalibration":
        """Uncalibrated defaults: rank by the logit alone, plain sigmoids. For tests and bootstrapping."""
        return cls(
            fusion=(1.0, 0.0, 0.0),
            top1=LogisticMap((1.0, 0.0), 0.0, (0.0, 0.0), (1.0, 1.0)),
            no_tool=LogisticMap((-1.0, 0.0), 0.0, (0.0, 0.0), (1.0, 1.0)),
            relevance=LogisticMap((1.0,), 0.0, (0.0,), (1.0,)),
            no_tool_inputs=("max_ce", "max_dense"),
        )

    def apply(self, ce: np.ndarray, dense: np.ndarray, lexical: np.ndarray, n_tools: int = 0) -> TurnProbabilities:
        """Probabilities for one turn's candidates; `n_tools` is the size of the registry they came from."""
        ce, dense, lexical = (np.asarray(a, dtype=np.float64) for a in (ce, dense, lexical))
        if self.n_tools_range is not None:
            n_tools = int(np.clip(n_tools, *self.n_tools_range))
        fused = np.asarray(self.fusion) @ np.vstack([ce, dense, lexical])
        order = np.argsort(-fused, kind="mergesort")
        probs = softmax(fused[order])
        p_top1 = float(self.top1(top1_features(probs, ce[order[0]], n_tools, self.top1_inputs))[0])
        p_no_tool = float(self.no_tool(no_tool_features(ce, dense, lexical, self.no_tool_inputs, n_tools))[0])
        relevance = self.relevance(ce[order][:, None])
        p_shortlist = 1.0 if self.shortlist is None else float(
            self.shortlist(shortlist_features(probs, self.shortlist_k, n_tools, self.shortlist_inputs))[0])
        return TurnProbabilities(order, fused, probs, relevance, p_top1, p_no_tool, p_shortlist)

    def to_dict(self) -> dict:
        return {"fusion": list(self.fusion), "top1": self.top1.to_dict(), "no_tool": self.no_tool.to_dict(),
                "no_tool_inputs": list(self.no_tool_inputs), "top1_inputs": list(self.top1_inputs),
                "relevance": self.relevance.to_dict(), "n_tools_range": self.n_tools_range,
                "shortlist": None if self.shortlist is None else self.shortlist.to_dict(),
                "shortlist_inputs": list(self.shortlist_inputs), "shortlist_k": self.shortlist_k,
                "thresholds": self.thresholds.to_dict(), "report": self.report}

    @classmethod
    def from_dict(cls, d: dict) -> "GateCalibration":
        inputs = tuple(d.get("no_tool_inputs", _LEGACY_NO_TOOL_INPUTS))
        top_inputs = tuple(d.get("top1_inputs", _LEGACY_TOP1_INPUTS))
        no_tool, top1 = LogisticMap.from_dict(d["no_tool"]), LogisticMap.from_dict(d["top1"])
        for names, table, fitted in ((inputs, NO_TOOL_INPUTS, no_tool), (top_inputs, TOP1_INPUTS, top1)):
            if any(name not in table for name in names) or len(fitted.weights) != len(names):
                raise ValueError(f"calibration inputs {list(names)} do not fit this build ({', '.join(table)})")
        short = LogisticMap.from_dict(d["shortlist"]) if d.get("shortlist") else None
        short_inputs = tuple(d.get("shortlist_inputs", DEFAULT_SHORTLIST_INPUTS))
        if short is not None and (any(n not in SHORTLIST_INPUTS for n in short_inputs) or len(short.weights) != len(short_inputs)):
            raise ValueError(f"calibration inputs {list(short_inputs)} do not fit this build ({', '.join(SHORTLIST_INPUTS)})")
        span = d.get("n_tools_range")
        return cls(tuple(float(x) for x in d["fusion"]), top1, no_tool, LogisticMap.from_dict(d["relevance"]),
                   Thresholds.from_dict(d["thresholds"]), dict(d.get("report", {})), inputs, top_inputs,
                   (int(span[0]), int(span[1])) if span else None, short, short_inputs, int(d.get("shortlist_k", 5)))


@dataclass(frozen=True)
class ScoredTurn:
    """Raw scores of one calibration turn and its labels (gold marks the needed candidates)."""

    ce: np.ndarray
    dense: np.ndarray
    lexical: np.ndarray
    gold: np.ndarray           # bool per candidate
    no_tool: bool
    n_tools: int = 0           # size of the registry the candidates came from
    ranked: bool = True        # False: other tools may serve it as well as its gold (`AMBIGUOUS_SOURCES`): it counts
                               # for "a tool applies" (p_no_tool, NO_TOOL), not for which tool (order, p_top1, ROUTE)


@dataclass(frozen=True)
class RiskTargets:
    route: float = 0.01        # at most 1% of ROUTE decisions wrong
    no_tool: float = 0.05      # at most 5% of NO_TOOL decisions wrong
    shortlist: float = 0.05    # at most 5% of SHORTLIST decisions miss the right tool
    shortlist_k: int = 5
    multi: float = 0.5
    z: float = 1.645           # ROUTE / NO_TOOL targets must hold at this one-sided confidence (Wilson bound)
    no_tool_share: float = 0.2  # share of turns expected to need no tool in use: p_no_tool and its threshold are
                                # fitted for this mix, not for the calibration split's (which may be mostly no-tool)


def route_confidence(p_top1, p_no_tool):
    """P(a tool applies and the top candidate is it) = p_top1 * (1 - p_no_tool): what a ROUTE must be sure of
    (floats or arrays). p_top1 alone is conditional on a tool applying; on the calibration split every ROUTE error
    among the 300 most confident turns by p_top1 was a turn that needed no tool (the shipped gate, issue 10)."""
    return p_top1 * (1.0 - p_no_tool)


def prior_weights(is_no_tool: np.ndarray, share: float) -> np.ndarray:
    """Per-turn weights that give no-tool turns `share` of the total weight (and relevant turns the rest).

    >>> prior_weights(np.array([True, True, True, False]), 0.5).tolist()
    [0.6666666666666666, 0.6666666666666666, 0.6666666666666666, 2.0]
    """
    is_no_tool = np.asarray(is_no_tool, dtype=bool)
    frac = is_no_tool.mean() if is_no_tool.size else 0.0
    if frac in (0.0, 1.0):
        return np.ones(is_no_tool.size)
    return np.where(is_no_tool, share / frac, (1.0 - share) / (1.0 - frac))


# How the gate orders the SLB's candidates (`fit_calibration(rank=...)`):
# - "slb": by the SLB's own score (dense + lexical), one temperature fitted; the cross-encoder informs only the
#   probabilities (p_top1, p_no_tool, relevance). Chosen on dev (issue 10, session 7): on BFCL registries the gate
#   never trained on, any cross-encoder weight cost top-1 (D3 0.850 -> 0.847, DB 0.890 -> 0.873 with the fused
#   weights fitted on the training sources' held-out split), as on the held-out ToolAlpaca source (0.772 -> 0.677).
# - "fused": a conditional logit over [ce, dense, lexical] fitted on the calibration split (the training sources'
#   style, where the cross-encoder looks stronger than it is on a new registry).
RANKINGS = ("slb", "fused")


def fit_calibration(turns: Sequence[ScoredTurn], targets: RiskTargets = RiskTargets(),
                    no_tool_inputs: Sequence[str] = DEFAULT_NO_TOOL_INPUTS,
                    top1_inputs: Sequence[str] = DEFAULT_TOP1_INPUTS, rank: str = "slb") -> GateCalibration:
    """Fit fusion, probability maps and thresholds on a held-out calibration split (`rank`: see RANKINGS)."""
    if rank not in RANKINGS:
        raise ValueError(f"rank must be one of {RANKINGS}, got {rank!r}")
    relevant = [t for t in turns if not t.no_tool and t.ranked]
    ranked = [t for t in relevant if t.gold.any()]
    if len(ranked) < 10:
        raise ValueError(f"calibration needs >= 10 relevant turns whose tool is among the candidates, got {len(ranked)}")
    k = max(len(t.ce) for t in turns)
    feats = np.zeros((len(ranked), k, 3))
    mask = np.zeros((len(ranked), k), dtype=bool)
    labels = np.zeros(len(ranked), dtype=int)
    for row, t in enumerate(ranked):
        n = len(t.ce)
        feats[row, :n] = np.c_[t.ce, t.dense, t.lexical]
        mask[row, :n] = True
        labels[row] = int(np.flatnonzero(t.gold)[np.argmax(t.ce[t.gold])])
    if rank == "slb":  # one temperature on the SLB's score: its order, softmax probabilities fitted
        (t,) = fit_conditional_logit(feats[:, :, 1:2] + feats[:, :, 2:3], labels, mask)
        fusion = (0.0, float(t), float(t))
    else:
        fusion = tuple(float(w) for w in fit_conditional_logit(feats, labels, mask))
    ident = GateCalibration.identity()
    staged = GateCalibration(fusion, ident.top1, ident.no_tool, ident.relevance, no_tool_inputs=ident.no_tool_inputs)
    # one registry size only: its log is a constant, which the ridge-free fit cannot use
    sized = len({t.n_tools for t in turns}) >= 2
    no_tool_inputs, top1_inputs, short_inputs = (tuple(n for n in names if sized or n != "log_n_tools")
                                                 for names in (no_tool_inputs, top1_inputs, DEFAULT_SHORTLIST_INPUTS))
    # p_top1: Platt on relevant turns (a missing gold tool counts as a wrong top-1); p_shortlist: the right tool among
    # the top shortlist_k, on the same turns (a missing gold tool is a miss)
    k_short = targets.shortlist_k
    x_top, y_top, x_sh, y_sh = [], [], [], []
    for t in relevant:
        out = staged.apply(t.ce, t.dense, t.lexical)
        x_top.append(top1_features(out.probs, t.ce[out.order[0]], t.n_tools, top1_inputs))
        y_top.append(bool(t.gold[out.order[0]]))
        x_sh.append(shortlist_features(out.probs, k_short, t.n_tools, short_inputs))
        y_sh.append(bool(t.gold[out.order[:k_short]].any()))
    top1 = fit_logistic(np.array(x_top), np.array(y_top, dtype=float))
    y_sh = np.array(y_sh, dtype=float)
    shortlist = fit_logistic(np.array(x_sh), y_sh) if 0 < y_sh.sum() < len(y_sh) else None
    # p_no_tool: no-tool turns against relevant ones
    x_nt = np.array([no_tool_features(t.ce, t.dense, t.lexical, no_tool_inputs, t.n_tools) for t in turns])
    y_nt = np.array([t.no_tool for t in turns], dtype=float)
    if 0 < y_nt.sum() < len(y_nt):
        no_tool = fit_logistic(x_nt, y_nt, sample_weight=prior_weights(y_nt.astype(bool), targets.no_tool_share))
    else:  # no no-tool turns to learn from: a fixed, uninformative map (p = 0.5 at the mean)
        no_tool = LogisticMap((0.0,) * len(no_tool_inputs), 0.0, (0.0,) * len(no_tool_inputs), (1.0,) * len(no_tool_inputs))
    # per-candidate relevance
    x_rel = np.concatenate([t.ce for t in turns if t.ranked or t.no_tool])[:, None]
    y_rel = np.concatenate([t.gold for t in turns if t.ranked or t.no_tool]).astype(float)
    relevance = fit_logistic(x_rel, y_rel)
    sizes = [t.n_tools for t in turns]
    fitted = GateCalibration(fusion, top1, no_tool, relevance, no_tool_inputs=no_tool_inputs, top1_inputs=top1_inputs,
                             n_tools_range=(min(sizes), max(sizes)), shortlist=shortlist, shortlist_inputs=short_inputs,
                             shortlist_k=k_short)
    return with_thresholds(fitted, turns, targets)


def with_thresholds(cal: GateCalibration, turns: Sequence[ScoredTurn], targets: RiskTargets) -> GateCalibration:
    """Derive thresholds from target risks on scored calibration turns; report the in-sample metrics.

    ROUTE is certified on the mix it will meet: relevant and no-tool turns (weighted to `targets.no_tool_share`),
    where a ROUTE on a turn that needs no tool counts as an error, and NO_TOOL (decided first) takes its turns away.
    NO_TOOL is certified on every turn; ROUTE and SHORTLIST on the turns whose gold is the one right tool (`ranked`).
    """
    outs = [cal.apply(t.ce, t.dense, t.lexical, t.n_tools) for t in turns]
    every = np.array([o.p_no_tool for o in outs])
    is_nt_every = np.array([t.no_tool for t in turns])
    t_no_tool = (threshold_for_risk(every, is_nt_every, targets.no_tool, min_accepted=5, z=targets.z,
                                    weights=prior_weights(is_nt_every, targets.no_tool_share))
                 if is_nt_every.any() and (~is_nt_every).any() else float("inf"))
    keep = [i for i, t in enumerate(turns) if t.ranked or t.no_tool]
    n_unranked = len(turns) - len(keep)
    turns, outs = [turns[i] for i in keep], [outs[i] for i in keep]
    rel = [i for i, t in enumerate(turns) if not t.no_tool]
    p_all = np.array([o.p_top1 for o in outs])
    ok_all = np.array([(not t.no_tool) and bool(t.gold[o.order[0]]) for t, o in zip(turns, outs)])
    second_all = np.array([o.relevance[1] if len(o.relevance) > 1 else 0.0 for o in outs])
    p_top1, correct, second = p_all[rel], ok_all[rel], second_all[rel]
    k_short = cal.shortlist_k if cal.shortlist is not None else targets.shortlist_k
    in_short = np.array([bool(turns[i].gold[outs[i].order[:k_short]].any()) for i in rel], dtype=bool)
    p_nt = np.array([o.p_no_tool for o in outs])
    is_nt = np.array([t.no_tool for t in turns])
    mix = prior_weights(is_nt, targets.no_tool_share)
    route_conf = route_confidence(p_all, p_nt) * (second_all < targets.multi) * (p_nt < t_no_tool)
    t_route = threshold_for_risk(route_conf, ok_all, targets.route, min_accepted=5, z=targets.z, weights=mix)
    p_nt_rel = p_nt[rel]
    routed_all = route_conf >= t_route
    routed = routed_all[rel]
    if cal.shortlist is not None:
        # FALLBACK where the shortlist is likely to miss the tool: the lowest p_shortlist whose SHORTLISTs keep
        # misses within the SHORTLIST risk, over the relevant turns neither routed nor told NO_TOOL
        p_short = np.array([o.p_shortlist for o in outs])[rel]
        pool = ~routed & (p_nt_rel < t_no_tool)
        t_short = threshold_for_risk(p_short[pool], in_short[pool], targets.shortlist) if pool.any() else 0.0
        thresholds = Thresholds(route=t_route, no_tool=t_no_tool, fallback=t_no_tool, multi=targets.multi,
                                shortlist=t_short)
        shortlisted = pool & (p_short >= t_short)
    else:  # a calibration without the p_shortlist map (older gates): FALLBACK from p_no_tool, as they were saved
        not_routed = p_top1 < t_route
        conf = threshold_for_risk(1.0 - p_nt_rel[not_routed], in_short[not_routed], targets.shortlist) if not_routed.any() else 0.0
        t_fallback = float(min(1.0 - conf, t_no_tool)) if np.isfinite(conf) else 0.0
        thresholds = Thresholds(route=t_route, no_tool=t_no_tool, fallback=t_fallback, multi=targets.multi)
        shortlisted = ~routed & (p_nt_rel < t_fallback)
    report = {
        "n_turns": len(turns) + n_unranked, "n_relevant": len(rel), "n_no_tool": int(is_nt.sum()),
        "n_relevant_unranked": n_unranked,
        "top1": float(correct.mean()) if len(rel) else float("nan"),
        "ece_top1": expected_calibration_error(p_top1, correct) if len(rel) else float("nan"),
        "no_tool_auroc": auroc(every, is_nt_every) if is_nt_every.any() and (~is_nt_every).any() else float("nan"),
        "coverage": float(routed.mean()) if len(rel) else 0.0,
        "selective_accuracy": float(ok_all[routed_all].mean()) if routed_all.any() else float("nan"),
        "route_on_no_tool": int((routed_all & is_nt).sum()),
        "shortlist_rate": float(shortlisted.mean()) if len(rel) else 0.0,
        "shortlist_miss": float(1.0 - in_short[shortlisted].mean()) if shortlisted.any() else float("nan"),
        "targets": targets.__dict__,
    }
    return dataclasses.replace(cal, thresholds=thresholds, report=report)
