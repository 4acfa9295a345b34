"""One turn end to end on deterministic parts: hash embedder, scripted gates and a scripted LLM."""

from __future__ import annotations

import math
from typing import Sequence

import pytest

from nexus.gate.decision import Action, Decision
from nexus.llm.prompts import Exchange
from nexus.llm.scripted import ScriptedBackend
from nexus.registry import Registry, Tool
from nexus.router import Router, ScoreGate, load_gate
from nexus.slb import HashEmbedder, SemanticLookasideBuffer
from nexus.slb.index import Hit

TOOLS = [
    Tool("get_time", "Current time in a timezone", {"type": "object", "properties": {"timezone": {"type": "string"}},
                                                    "required": ["timezone"]}, "time"),
    Tool("git_status", "Show the working tree status of a git repository", {
        "type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}, "git"),
    Tool("calculate", "Evaluate an arithmetic expression", {
        "type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}, "calc"),
]


class ScriptedGate:
    """Returns a fixed action over the SLB's hits and records what it was given."""

    def __init__(self, action: Action):
        self.action = action
        self.seen: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def decide(self, turn: str, history: Sequence[str] = (), hits: Sequence[Hit] | None = None) -> Decision:
        self.seen.append((turn, tuple(history), tuple(h.key for h in hits or ())))
        return Decision(self.action, tuple(hits or ())[:3], p_top1=0.5, p_no_tool=0.9 if self.action is Action.NO_TOOL else 0)


@pytest.fixture
def parts():
    registry = Registry()
    for tool in TOOLS:
        registry.set_source(tool.origin, [tool])
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    return registry, slb


def test_route_turn_end_to_end(parts):
    registry, slb = parts
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'])
    router = Router(registry, slb, ScriptedGate(Action.ROUTE), backend)
    header = router.caller.prompts.call_prompt("", [])
    assert router.warm() == backend.count_tokens(header)  # a cold backend prefills the whole few-shot header
    assert router.warm() == 1  # warm: only the last token again, for its logits
    routed = router.route("what is the current time in Tokyo")
    assert routed.decision.action is Action.ROUTE and routed.call.tool == "get_time"
    assert routed.call.arguments == {"timezone": "Asia/Tokyo"} and routed.call.valid
    t = routed.timings
    assert 0 <= t.slb_ms <= t.total_ms and t.ttfat_ms is not None and t.ttfat_ms <= t.total_ms
    assert routed.context_tokens == routed.call.prompt_tokens
    assert routed.full_context_tokens > routed.context_tokens and routed.tokens_saved > 0
    # the prompt carried only the routed schema
    prompt = backend.calls[-1][1].text.split("Tools:\n")[-1]
    assert "get_time(" in prompt and "git_status(" not in prompt and "calculate(" not in prompt


def test_no_tool_turn_has_no_ttfat(parts):
    registry, slb = parts
    router = Router(registry, slb, ScriptedGate(Action.NO_TOOL), ScriptedBackend(answers=["Glad to help."]))
    routed = router.route("thanks a lot")
    assert routed.call.answer == "Glad to help." and routed.call.tool is None and routed.timings.ttfat_ms is None


@pytest.mark.parametrize("turn", ["", "   \n"])
def test_a_blank_turn_calls_no_tool_even_after_a_tool_turn(parts, turn):
    registry, slb = parts
    gate = ScriptedGate(Action.ROUTE)
    router = Router(registry, slb, gate, ScriptedBackend(answers=["How can I help?"]))
    history = [Exchange("time in Tokyo?", "get_time", {"timezone": "Asia/Tokyo"}, "10:00")]
    routed = router.route(turn, history)
    assert routed.decision.action is Action.NO_TOOL and routed.call.tool is None and gate.seen == []


def test_history_reaches_the_gate_always_and_the_llm_only_for_follow_ups(parts):
    registry, slb = parts
    gate = ScriptedGate(Action.ROUTE)
    backend = ScriptedBackend(arguments=['{"timezone": "Europe/London"}'])
    router = Router(registry, slb, gate, backend)
    history = [Exchange("time in Tokyo?", "get_time", {"timezone": "Asia/Tokyo"}, "10:00")]
    router.route("what about London?", history)
    assert gate.seen[-1][1] == ("time in Tokyo?",)
    assert "Request: time in Tokyo?" in backend.calls[-1][1].text
    router.route("show the git status of the repository at /tmp/repo", history)
    assert "Request: time in Tokyo?" not in backend.calls[-1][1].text


def test_score_gate_routes_on_a_clear_margin_else_shortlists(parts):
    _, slb = parts
    hits = [Hit("a", 0.9, 0.9, 0), Hit("b", 0.5, 0.5, 0), Hit("c", 0.4, 0.4, 0)]
    assert ScoreGate(slb).decide("x", hits=hits).action is Action.ROUTE
    close = [Hit("a", 0.9, 0.9, 0), Hit("b", 0.85, 0.85, 0)]
    decision = ScoreGate(slb).decide("x", hits=close)
    assert decision.action is Action.SHORTLIST and [h.key for h in decision.candidates] == ["a", "b"]
    # softmax over the scores at temperature 0.05: 1 / (1 + exp((0.85 - 0.9) / 0.05)) = 1 / (1 + e^-1)
    assert decision.p_top1 == pytest.approx(1 / (1 + math.exp(-1)))
    # the margin is inclusive: exactly route_margin apart routes, a hair less shortlists
    edge = [Hit("a", 0.75, 0.75, 0), Hit("b", 0.5, 0.5, 0)]  # a margin of exactly 0.25 (binary fractions)
    assert ScoreGate(slb, route_margin=0.25).decide("x", hits=edge).action is Action.ROUTE
    assert ScoreGate(slb, route_margin=0.2501).decide("x", hits=edge).action is Action.SHORTLIST
    assert ScoreGate(slb).decide("x", hits=[Hit("a", 0.05, 0.05, 0)]).action is Action.NO_TOOL


def test_load_gate_without_a_trained_model_says_so(parts, tmp_path, caplog):
    registry, slb = parts
    gate = load_gate(slb, registry, tmp_path / "missing")
    assert isinstance(gate, ScoreGate) and "no trained gate" in caplog.text


class PrescoringGate(ScriptedGate):
    """A ScriptedGate that can score ahead (as `BoundaryGate.prescore`) and records on which thread it did."""

    def __init__(self, action: Action):
        super().__init__(action)
        self.prescored: list[tuple[str, tuple[str, ...], str]] = []
        self.given: list[object] = []

    def prescore(self, text: str, keys: Sequence[str], threads: int = 1):
        import threading

        self.prescored.append((text, tuple(keys), threading.current_thread().name))
        return ("scores of", text)

    def decide(self, turn: str, history: Sequence[str] = (), hits: Sequence[Hit] | None = None, prescored=None) -> Decision:
        self.given.append(prescored)
        return super().decide(turn, history, hits)


def test_a_registry_within_k_is_scored_by_the_gate_on_a_second_thread_while_the_turn_is_embedded(parts):
    registry, slb = parts
    gate = PrescoringGate(Action.SHORTLIST)
    Router(registry, slb, gate, ScriptedBackend(), k=3).decide("what is the current time in Tokyo")
    (text, keys, thread), = gate.prescored
    assert text == "what is the current time in Tokyo" and set(keys) == set(registry.keys())
    assert thread.startswith("nexus-gate") and gate.given == [("scores of", text)]
    # more tools than the gate reads: the SLB must choose the candidates first, so nothing is scored ahead
    gate = PrescoringGate(Action.SHORTLIST)
    Router(registry, slb, gate, ScriptedBackend(), k=2).decide("what is the current time in Tokyo")
    assert gate.prescored == [] and gate.given == [None]


class SkippingGate(PrescoringGate):
    """A PrescoringGate with a cascade (`BoundaryGate.may_skip`): it must be handed the embedded turn first."""

    def may_skip(self) -> bool:
        return True


def test_a_gate_that_may_skip_the_cross_encoder_is_not_scored_ahead(parts):
    registry, slb = parts
    gate = SkippingGate(Action.SHORTLIST)
    decision, _, _ = Router(registry, slb, gate, ScriptedBackend(), k=3).decide("what is the current time in Tokyo")
    assert gate.prescored == [] and gate.given == [None] and decision.action is Action.SHORTLIST


def test_routing_reads_a_path_as_its_kind_and_the_llm_reads_it_as_written():
    registry = Registry()
    registry.set_source("fs", [
        Tool("list_directory", "List the files in a folder", {"type": "object"}, "fs"),
        Tool("open_project_notes", "Work notes: main project cache notes, work project notes", {"type": "object"}, "fs")])
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    gate = ScriptedGate(Action.ROUTE)
    backend = ScriptedBackend(arguments=["{}"])
    turn = "What's inside the folder /work/main/cache/project/notes?"
    routed = Router(registry, slb, gate, backend).route(turn)
    assert slb.search(turn, k=1)[0].key == "open_project_notes"  # the path's own words, read as words
    assert gate.seen[-1][2][0] == "list_directory"  # routing read "What's inside the folder a folder?"
    assert routed.call.tool == "list_directory" and turn in backend.calls[-1][1].text
