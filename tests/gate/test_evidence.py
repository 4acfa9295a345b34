"""The arithmetic evidence that overrules a NO_TOOL: what counts as a stated expression, which tools take one, and
the gate turning NO_TOOL into a SHORTLIST led by such a tool only when both hold."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nexus.gate import Action, BoundaryGate, GateModel
from nexus.gate.cross_encoder import FakePairScorer
from nexus.gate.evidence import stated_expression, takes_only_expression
from nexus.gate.probabilities import GateCalibration, Thresholds
from nexus.registry import Registry, Tool
from nexus.slb import HashEmbedder, SemanticLookasideBuffer

EXPR = {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}


@pytest.mark.parametrize("text, expected", [
    ("What is 12.5 * 8 + 3?", "12.5 * 8 + 3"),
    ("How much is 250 minus 75?", "250 - 75"),
    ("Divide 900 by 12.", "900 / 12"),
    ("Add 1250 and 3775.", "1250 + 3775"),
    ("Subtract 15 from 40", "40 - 15"),
    ("Calculate 15% of 240.", "15 / 100 * 240"),
    ("What is 2 raised to the 10th power?", "2 ** 10"),
    ("What's the square root of 144?", "144 ** 0.5"),
    ("Work out (120 - 45) / 5 for me.", "(120 - 45) / 5"),
    ("What is the sum of 2 and 3?", "2 + 3"),
    ("What's the difference between 9 and 4?", "9 - 4"),
    ("What is 2^3?", "2 ** 3"),
    ("Calculate (45*67+23)/89-34", "(45*67+23)/89-34"),  # a hyphen beside an operator subtracts
])
def test_an_expression_in_symbols_or_words_is_stated(text, expected):
    assert stated_expression(text) == expected


@pytest.mark.parametrize("text", [
    "Thanks, that's all for today!", "Book 2 rooms for 3 nights", "Reserve a table on 2023-10-06 at 19:30",
    "Help find a restaurant on 19/03/2024 at 12.00", "Call me at 555-1234", "Meeting from 10 to 12",
    "Add 3 to the 2nd list", "What is the meaning of life?", "",
])
def test_dates_times_ranges_ids_and_chat_state_no_expression(text):
    assert stated_expression(text) is None


def test_a_tool_takes_only_an_expression_when_every_required_input_is_one():
    assert takes_only_expression(EXPR)
    assert takes_only_expression({"type": "object", "properties": {"formula": {"type": "string"}}})  # none required
    assert not takes_only_expression({"type": "object", "properties": {"equation": {"type": "string"},
                                      "variable": {"type": "string"}}, "required": ["equation", "variable"]})
    assert not takes_only_expression({"type": "object", "properties": {"pattern": {
        "type": "string", "description": "a regular expression"}}, "required": ["pattern"]})
    assert not takes_only_expression({"type": "object", "properties": {"expression": {"type": "string",
                                      "enum": ["a", "b"]}}, "required": ["expression"]})
    assert not takes_only_expression({"type": "object", "properties": {}})
    assert not takes_only_expression({"type": "object", "properties": "broken", "required": ["x"]})


def _gate(tools):
    reg = Registry()
    reg.set_source("t", tools)
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    # NO_TOOL for everything: identity calibration's p_no_tool is about 0.5, the threshold 0.1
    cal = replace(GateCalibration.identity(), thresholds=Thresholds(route=2.0, no_tool=0.1, fallback=0.1, multi=2.0))
    return BoundaryGate(slb, reg, GateModel.from_scorer(FakePairScorer(), slb, cal))


OTHERS = [Tool("get_time", "Current local time in a timezone", {"type": "object", "properties": {}}, "t"),
          Tool("send_email", "Send an email message", {"type": "object", "properties": {"to": {"type": "string"}}}, "t")]


def test_a_stated_expression_overrules_no_tool_when_a_candidate_takes_only_an_expression():
    gate = _gate([*OTHERS, Tool("calculate", "Calculates the given expression.", EXPR, "t")])
    d = gate.decide("What is 12.5 * 8 + 3?")
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "calculate"
    _, scored = gate.score("What is 12.5 * 8 + 3?", gate.slb.search("What is 12.5 * 8 + 3?", k=gate.k))
    # the gate's own NO_TOOL probability, reported as it was (above the NO_TOOL threshold it overruled)
    assert d.p_no_tool == pytest.approx(scored.p_no_tool) and scored.p_no_tool >= 0.1
    assert gate.decide("Thanks, that's all for today!").action is Action.NO_TOOL


def test_without_such_a_tool_an_expression_changes_nothing():
    assert _gate(OTHERS).decide("What is 12.5 * 8 + 3?").action is Action.NO_TOOL
    solver = Tool("solve", "Solve an equation for a variable", {"type": "object", "properties": {
        "equation": {"type": "string"}, "variable": {"type": "string"}}, "required": ["equation", "variable"]}, "t")
    assert _gate([*OTHERS, solver]).decide("What is 12.5 * 8 + 3?").action is Action.NO_TOOL
