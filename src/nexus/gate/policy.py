"""The decision policy: calibrated probabilities in, one of four actions out. Pure and scripted-testable.

>>> from nexus.gate.probabilities import Thresholds
>>> th = Thresholds(route=0.9, no_tool=0.8, fallback=0.4, multi=0.5)
>>> choose_action(p_top1=0.97, p_no_tool=0.01, second_relevance=0.1, thresholds=th).value
'route'
>>> choose_action(p_top1=0.97, p_no_tool=0.10, second_relevance=0.1, thresholds=th).value  # 0.97 * 0.90 < 0.9
'shortlist'
>>> choose_action(p_top1=0.97, p_no_tool=0.01, second_relevance=0.7, thresholds=th).value
'shortlist'
>>> choose_action(p_top1=0.30, p_no_tool=0.85, second_relevance=0.0, thresholds=th).value
'no_tool'
>>> choose_action(p_top1=0.30, p_no_tool=0.50, second_relevance=0.0, thresholds=th).value
'fallback'
>>> th = Thresholds(route=0.9, no_tool=0.8, fallback=0.8, multi=0.5, shortlist=0.7)
>>> choose_action(p_top1=0.30, p_no_tool=0.10, second_relevance=0.0, thresholds=th, p_shortlist=0.6).value
'fallback'
>>> choose_action(p_top1=0.30, p_no_tool=0.10, second_relevance=0.0, thresholds=th, p_shortlist=0.9).value
'shortlist'
"""

from __future__ import annotations

from nexus.gate.decision import Action
from nexus.gate.probabilities import Thresholds, route_confidence


def choose_action(p_top1: float, p_no_tool: float, second_relevance: float, thresholds: Thresholds,
                  p_shortlist: float = 1.0) -> Action:
    """NO_TOOL when no tool is likely to apply; ROUTE when a tool applies and the top one is it with the target
    precision (`route_confidence`)
    and the turn does not need a second tool; FALLBACK (all schemas) when the shortlist is likely to miss
    the tool (p_shortlist below its threshold; older gates: p_no_tool in the band below NO_TOOL); SHORTLIST
    otherwise."""
    if p_no_tool >= thresholds.no_tool:
        return Action.NO_TOOL
    if route_confidence(p_top1, p_no_tool) >= thresholds.route and second_relevance < thresholds.multi:
        return Action.ROUTE
    if p_no_tool >= thresholds.fallback or p_shortlist < thresholds.shortlist:
        return Action.FALLBACK
    return Action.SHORTLIST
