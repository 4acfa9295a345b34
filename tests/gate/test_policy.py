"""The decision policy and threshold derivation on scripted scores."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from nexus.gate.decision import Action
from nexus.gate.policy import choose_action
from nexus.gate.probabilities import GateCalibration, RiskTargets, ScoredTurn, Thresholds, fit_calibration, with_thresholds

TH = Thresholds(route=0.9, no_tool=0.8, fallback=0.4, multi=0.5)


@pytest.mark.parametrize(
    "p_top1, p_no_tool, second, expected",
    [
        # (0.97, 0.01, 0.10 -> ROUTE and the p_shortlist cases are the policy module's doctest)
        (1.00, 0.10, 0.49, Action.ROUTE),       # thresholds are inclusive / exclusive as documented (1.0 * 0.9 = 0.9)
        (0.89, 0.01, 0.10, Action.SHORTLIST),   # not confident enough to route
        (0.99, 0.01, 0.70, Action.SHORTLIST),   # a second tool is needed: multi-call turn
        (0.80, 0.45, 0.10, Action.FALLBACK),    # unsure whether any candidate applies
        (0.99, 0.05, 0.10, Action.ROUTE),       # a confident route needs no shortlist
        # regression (issue 10): a confident top-1 on a turn that may need no tool is not routed; ROUTE needs
        # p_top1 * (1 - p_no_tool), P(a tool applies and it is the top one), above its threshold
        (0.99, 0.45, 0.10, Action.FALLBACK),
        (0.99, 0.30, 0.10, Action.SHORTLIST),
        (0.30, 0.80, 0.00, Action.NO_TOOL),
        (0.99, 0.95, 0.00, Action.NO_TOOL),     # no-tool wins over a confident-looking top-1
    ],
)
def test_choose_action(p_top1, p_no_tool, second, expected):
    assert choose_action(p_top1, p_no_tool, second, TH) is expected


def test_infinite_thresholds_disable_actions():
    never = Thresholds(route=math.inf, no_tool=math.inf, fallback=math.inf, multi=0.5)
    assert choose_action(1.0, 1.0, 0.0, never) is Action.SHORTLIST
    assert Thresholds.from_dict(never.to_dict()) == never


def _scripted_turns(n: int, seed: int = 0) -> list[ScoredTurn]:
    """Turns whose gold candidate leads by a margin that also predicts correctness; some no-tool turns."""
    rng = np.random.default_rng(seed)
    turns = []
    for i in range(n):
        if i % 5 == 0:
            ce = rng.normal(-3, 1, 10)
            turns.append(ScoredTurn(ce, rng.normal(0.2, 0.05, 10), np.zeros(10), np.zeros(10, bool), True))
            continue
        ce = rng.normal(0, 1, 10)
        gold = np.zeros(10, bool)
        g = int(rng.integers(10))
        gold[g] = True
        ce[g] += rng.normal(3, 2)
        turns.append(ScoredTurn(ce, rng.normal(0.5, 0.05, 10), np.zeros(10), gold, False))
    return turns


def test_fitted_calibration_meets_its_targets_on_fresh_turns():
    """Fitted on one draw, measured on another from the same process (nothing below is measured on the turns the
    calibration was fitted on, where its own thresholds guarantee the risk targets)."""
    from nexus.gate.calibration import auroc, expected_calibration_error

    cal = fit_calibration(_scripted_turns(2000), RiskTargets(route=0.02, no_tool=0.05, shortlist=0.05), rank="fused")
    fresh = _scripted_turns(2000, seed=7)
    outs = [cal.apply(t.ce, t.dense, t.lexical) for t in fresh]
    actions = [choose_action(o.p_top1, o.p_no_tool, o.relevance[1], cal.thresholds) for o in outs]
    relevant = [(o, t) for o, t in zip(outs, fresh) if not t.no_tool]
    top1_right = np.array([t.gold[o.order[0]] for o, t in relevant], dtype=float)
    # p_top1 is calibrated (ECE 0.024 on this draw) and p_no_tool separates the no-tool turns
    assert expected_calibration_error(np.array([o.p_top1 for o, _ in relevant]), top1_right) < 0.05
    assert auroc(np.array([o.p_no_tool for o in outs]), np.array([t.no_tool for t in fresh])) > 0.95
    # ROUTE keeps its risk near the 2 % target (no-tool turns routed count as errors) at the coverage the fit reported
    routed = [(o, t) for o, t, a in zip(outs, fresh, actions) if a is Action.ROUTE]
    correct = sum(not t.no_tool and t.gold[o.order[0]] for o, t in routed)
    assert len(routed) > 200 and correct / len(routed) >= 0.96
    coverage = sum(a is Action.ROUTE for a, t in zip(actions, fresh) if not t.no_tool) / len(relevant)
    assert coverage == pytest.approx(cal.report["coverage"], abs=0.05)


def test_unreachable_risk_target_disables_route():
    # the most confident turn is wrong, so no threshold gives zero risk: ROUTE is switched off (inf)
    z = np.zeros(3)
    wrong = ScoredTurn(np.array([9.0, -5.0, -5.0]), z, z, np.array([False, True, False]), False)
    right = [ScoredTurn(np.array([float(m), -5.0, -5.0]), z, z, np.array([True, False, False]), False) for m in range(1, 8)]
    cal = with_thresholds(GateCalibration.identity(), [wrong, *right], RiskTargets(route=0.0, z=0.0))
    assert cal.thresholds.route == math.inf
    assert cal.report["coverage"] == 0.0
    # one error in eight turns (12.5 %) is within a 20 % target: every turn is routed, down to the least confident
    relaxed = with_thresholds(GateCalibration.identity(), [wrong, *right], RiskTargets(route=0.2, z=0.0))
    identity = GateCalibration.identity()
    confidence = [(lambda o: o.p_top1 * (1 - o.p_no_tool))(identity.apply(t.ce, t.dense, t.lexical)) for t in [wrong, *right]]
    assert relaxed.thresholds.route == pytest.approx(min(confidence))
    assert relaxed.report["coverage"] == 1.0 and relaxed.report["selective_accuracy"] == pytest.approx(7 / 8)


def test_calibration_round_trips_through_dict():
    cal = fit_calibration(_scripted_turns(500), rank="fused")
    again = GateCalibration.from_dict(cal.to_dict())
    t = _scripted_turns(3, seed=1)[1]
    a, b = cal.apply(t.ce, t.dense, t.lexical), again.apply(t.ce, t.dense, t.lexical)
    assert (a.p_top1, a.p_no_tool) == pytest.approx((b.p_top1, b.p_no_tool))
    assert again.thresholds == cal.thresholds


def test_rank_slb_keeps_the_slbs_order_and_fits_only_its_temperature():
    # on these calibration turns both the cross-encoder's logit and the dense channel lead the gold: "fused" learns
    # to follow the logit too, "slb" must keep the SLB's order whatever the logit says
    turns = [dataclasses.replace(t, dense=t.dense + 0.1 * t.gold) for t in _scripted_turns(600)]
    fused = fit_calibration(turns, rank="fused")
    slb = fit_calibration(turns, rank="slb")
    assert fused.fusion[0] > 0.5
    assert slb.fusion[0] == 0.0 and slb.fusion[1] == slb.fusion[2]
    ce, dense, lexical = np.array([5.0, 0.0, -1.0]), np.array([0.3, 0.6, 0.5]), np.array([0.0, 0.0, 0.2])
    assert fused.apply(ce, dense, lexical).order[0] == 0
    assert slb.apply(ce, dense, lexical).order.tolist() == [2, 1, 0]   # dense + lexical: 0.7, 0.6, 0.3
    with pytest.raises(ValueError, match="rank must be"):
        fit_calibration(turns, rank="ce")


def test_fit_refuses_a_tiny_calibration_split():
    with pytest.raises(ValueError, match="calibration needs"):
        fit_calibration(_scripted_turns(5))


def test_no_tool_threshold_follows_the_expected_mix_not_the_calibration_mix():
    """A calibration split that is mostly no-tool must not yield a NO_TOOL threshold that fires on relevant turns."""
    from nexus.gate.probabilities import RiskTargets, ScoredTurn, fit_calibration

    rng = np.random.default_rng(0)
    turns = []
    for i in range(60):  # relevant: the gold tool first; some look weak (low scores)
        ce = np.array([rng.normal(2.0 if i % 3 else -1.5, 0.5), rng.normal(-2, 0.5), rng.normal(-3, 0.5)])
        turns.append(ScoredTurn(ce, ce / 10 + 0.5, np.zeros(3), np.array([True, False, False]), False))
    for _ in range(400):  # no-tool: weak scores, overlapping the weak relevant turns
        ce = rng.normal(-2.5, 0.5, 3)
        turns.append(ScoredTurn(ce, ce / 10 + 0.5, np.zeros(3), np.zeros(3, bool), True))
    mostly_nt = fit_calibration(turns, RiskTargets(no_tool_share=0.87))   # the split's own mix
    expected = fit_calibration(turns, RiskTargets(no_tool_share=0.2))

    def relevant_said_no_tool(cal):
        return sum(cal.apply(t.ce, t.dense, t.lexical).p_no_tool >= cal.thresholds.no_tool for t in turns if not t.no_tool)

    assert relevant_said_no_tool(mostly_nt) > relevant_said_no_tool(expected)
    weak = ScoredTurn(np.array([-1.5, -2.0, -3.0]), np.array([0.35, 0.3, 0.2]), np.zeros(3), np.array([True, False, False]), False)
    assert expected.apply(weak.ce, weak.dense, weak.lexical).p_no_tool < mostly_nt.apply(weak.ce, weak.dense, weak.lexical).p_no_tool


def test_registry_sizes_outside_the_calibrated_range_are_clamped_not_extrapolated():
    from nexus.gate.probabilities import RiskTargets, ScoredTurn, fit_calibration

    rng = np.random.default_rng(1)
    turns = []
    for size in (100, 300):
        for i in range(40):
            ce = rng.normal(0, 1, 4)
            gold = np.zeros(4, bool)
            gold[int(np.argmax(ce)) if i % 4 else 1] = True
            turns.append(ScoredTurn(ce, ce / 10, np.zeros(4), gold, False, size))
        for _ in range(20):
            ce = rng.normal(-1, 1, 4)
            turns.append(ScoredTurn(ce, ce / 10, np.zeros(4), np.zeros(4, bool), True, size))
    cal = fit_calibration(turns, RiskTargets())
    assert cal.n_tools_range == (100, 300)
    ce = np.array([1.0, 0.2, -0.5, -1.0])
    far, edge = cal.apply(ce, ce / 10, np.zeros(4), 5000), cal.apply(ce, ce / 10, np.zeros(4), 300)
    assert far.p_no_tool == edge.p_no_tool and far.p_top1 == edge.p_top1
    assert GateCalibration.from_dict(cal.to_dict()).n_tools_range == (100, 300)


def test_route_threshold_is_certified_with_no_tool_turns_counted_as_errors():
    """Regression (issue 8): a ROUTE on a turn that needs no tool is an error, so confident-looking no-tool turns
    must raise the ROUTE threshold (or switch ROUTE off), not be ignored."""
    rng = np.random.default_rng(1)
    z = np.zeros(3)
    relevant = [ScoredTurn(np.array([m, -4.0, -4.0]), z, z, np.array([True, False, False]), False)
                for m in rng.uniform(1, 8, 400)]
    # no-tool turns that look like the most confident relevant ones (and that NO_TOOL cannot catch: max_ce is high)
    tricky = [ScoredTurn(np.array([m, -4.0, -4.0]), z, z, np.zeros(3, bool), True) for m in rng.uniform(6, 8, 40)]
    targets = RiskTargets(route=0.01, z=0.0, no_tool_share=0.2)
    ident = GateCalibration.identity()
    alone = with_thresholds(ident, relevant, targets)
    mixed = with_thresholds(ident, relevant + tricky, targets)
    assert alone.report["selective_accuracy"] == 1.0
    assert mixed.thresholds.route > alone.thresholds.route
    # the tricky turns sit among the most confident relevant ones (about one in four above 6), so no threshold
    # keeps ROUTE's errors under 1 %: ROUTE is switched off, where alone every turn was routed
    assert alone.report["coverage"] == 1.0
    assert mixed.thresholds.route == math.inf and mixed.report["coverage"] == 0.0


def test_fallback_comes_from_the_shortlist_risk_not_from_p_no_tool():
    """Regression (issue 10): FALLBACK was decided on p_no_tool, which sent 83 % of relevant test turns to all schemas.
    Now a calibrated p_shortlist (right tool among the top shortlist_k) decides it, from the SHORTLIST risk target:
    turns whose tool the shortlist holds are shortlisted, turns whose tool it misses fall back."""
    def draw(seed: int) -> list[ScoredTurn]:
        rng = np.random.default_rng(seed)
        turns = []
        for i in range(1200):
            ce = rng.normal(0, 1, 10)
            gold = np.zeros(10, bool)
            if i % 4:          # a clear leader that is right
                gold[0] = True
                ce[0] += rng.uniform(2.5, 5)
            else:              # a flat list: the right tool sits anywhere, often below the top 5
                gold[int(rng.integers(10))] = True
            turns.append(ScoredTurn(ce, np.full(10, 0.5), np.zeros(10), gold, False))
        return turns

    turns = draw(3)
    targets = RiskTargets(route=0.0, z=0.0, shortlist=0.05, shortlist_k=5)
    cal = fit_calibration(turns, targets, rank="fused")
    assert cal.shortlist is not None
    # on a fresh draw: most clear turns keep a shortlist (or route), most flat ones fall back (flat turns miss the
    # top 5 half the time), and the SHORTLISTs that remain hold the right tool about as often as the 5 % target asks
    flat_fallback = clear_short = shortlisted = missed = 0
    for i, t in enumerate(draw(11)):
        out = cal.apply(t.ce, t.dense, t.lexical)
        action = choose_action(out.p_top1, out.p_no_tool, out.relevance[1], cal.thresholds, out.p_shortlist)
        flat_fallback += (i % 4 == 0) and action is Action.FALLBACK
        clear_short += (i % 4 != 0) and action is not Action.FALLBACK   # shortlisted or routed
        if action is Action.SHORTLIST:
            shortlisted += 1
            missed += not t.gold[out.order[:5]].any()
    assert clear_short > 0.8 * 900 and flat_fallback > 0.5 * 300
    assert shortlisted > 300 and missed / shortlisted < 0.08   # 0.064 on this draw (about 450 SHORTLISTs)
    again = GateCalibration.from_dict(cal.to_dict())
    t = turns[1]
    assert again.apply(t.ce, t.dense, t.lexical).p_shortlist == pytest.approx(cal.apply(t.ce, t.dense, t.lexical).p_shortlist)
    assert again.thresholds == cal.thresholds


def test_a_gate_saved_before_p_shortlist_keeps_its_decisions():
    legacy = {"route": 0.9, "no_tool": 0.8, "fallback": 0.4, "multi": 0.5}
    th = Thresholds.from_dict(legacy)
    assert th.shortlist == 0.0
    assert choose_action(0.3, 0.5, 0.0, th) is Action.FALLBACK and choose_action(0.3, 0.1, 0.0, th) is Action.SHORTLIST
