"""BoundaryGate with deterministic fakes: rerank, follow-up turns, multi-call shortlists, logging, refusal."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from nexus.gate import Action, BoundaryGate, GateModel, GateModelError, contextual_turn, is_follow_up
from nexus.gate.gate import Prescored, SureRoute
from nexus.gate.cross_encoder import FakePairScorer
from nexus.gate.probabilities import GateCalibration, Thresholds
from nexus.registry import Registry, Tool
from nexus.slb import HashEmbedder, SemanticLookasideBuffer
from nexus.slb.index import HybridWeights

OBJ = {"type": "object", "properties": {}}
TOOLS = [
    Tool("get_weather", "Current weather forecast for a city, temperature in celsius or fahrenheit", OBJ, "t"),
    Tool("get_time", "Current local time in a timezone", OBJ, "t"),
    Tool("convert_currency", "Convert an amount of money between currencies", OBJ, "t"),
    Tool("send_email", "Send an email message to a recipient", OBJ, "t"),
    Tool("book_flight", "Book a flight between two airports on a date", OBJ, "t"),
    Tool("search_hotels", "Search hotels in a city for given dates", OBJ, "t"),
]


@pytest.fixture()
def setup():
    reg = Registry()
    reg.set_source("t", TOOLS)
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    return reg, slb


def _gate(reg, slb, thresholds=Thresholds(route=0.6, no_tool=0.9, fallback=0.7, multi=0.5), **kw):
    cal = replace(GateCalibration.identity(), thresholds=thresholds)
    return BoundaryGate(slb, reg, GateModel.from_scorer(FakePairScorer(), slb, cal), **kw)


def test_rerank_puts_the_cross_encoder_choice_first(setup):
    reg, slb = setup
    d = _gate(reg, slb).decide("send an email to my boss")
    assert d.candidates[0].key == "send_email"
    assert len(d.scores) == len(d.candidates)
    assert list(d.scores) == sorted(d.scores, reverse=True)
    # a turn no tool serves reads as less likely routed and more likely tool-less than one that names its tool
    off = _gate(reg, slb).decide("tell me a joke about penguins")
    assert d.p_top1 > off.p_top1 and d.p_no_tool < off.p_no_tool


def test_a_blank_turn_is_no_tool_and_borrows_nothing(setup):
    reg, slb = setup
    d = _gate(reg, slb).decide("  ", history=["what's the weather forecast in Paris"])
    assert d.action is Action.NO_TOOL and d.candidates == () and d.p_no_tool == 1.0


def test_follow_up_turn_routes_with_recent_context(setup):
    reg, slb = setup
    gate = _gate(reg, slb)
    # alone, "what about Rome?" names no tool (convert_currency leads on a stray word); after a weather request it
    # is read with that request: get_weather leads, and more confidently
    alone = gate.decide("what about Rome?")
    follow = gate.decide("what about Rome?", history=["what's the weather forecast in Paris"])
    assert alone.candidates[0].key != "get_weather" and follow.candidates[0].key == "get_weather"
    assert follow.p_top1 > alone.p_top1
    # a stand-alone turn ignores the history
    fresh = gate.decide("book a flight from Paris to Rome on a date", history=["what's the weather in Paris"])
    assert fresh.candidates[0].key == "book_flight"


@pytest.mark.parametrize("turn, expected", [
    ("and in Celsius?", True), ("what about Tokyo?", True), ("do the same for Berlin", True),
    ("thanks!", False), ("Thanks, that's all for today!", False), ("thanks, and in Celsius?", True),
    ("Book a flight from Paris to Rome next Monday for two adults", False),
    ("Hello there!", False), ("good morning", False), ("hi", False),
    ("See you later!", False), ("Have a nice day!", False), ("take care", False),
    ("What time is it in Tokyo right now?", False), ("How cold is it in Oslo today?", False), ("what is it?", True),
    ("Can you convert it to Celsius?", True),
    ("Perfect, that's everything, thanks!", False), ("Great, thanks a lot, bye!", False), ("ok thanks, and in Celsius?", True),
    ("Open /ws/notes.txt and show me what it says.", False), ("And what about /ws/todo.txt?", True), ("Open it again", True),
    ("Remember that Bob's birthday is on 12 May.", False), ("Remember that one?", True), ("Tell Ann that it moved", True),
    ("Read /etc/passwd", False), ("what about /ws/a.txt?", True), ("and Tokyo?", True),
    ("Bye for now!", False),
    ("Is there anything to commit in my repository?", False), ("Are there uncommitted changes?", False),
    ("What is the weather there?", True), ("and there?", True),
    ("Hi, how's it going?", False), ("How is it going?", False), ("That's perfect, thank you!", False),
    ("That's great.", False), ("That is helpful, thanks", False), ("That's perfect, and in Celsius?", True),
    ("That one?", True),
    ("Is it daytime in Honolulu at the moment?", False), ("Is it late at night in Auckland right now?", False),
    ("Is it raining in Paris?", False), ("Is it open in the morning?", True), ("Is it correct?", True),
    ("Hi there, how are you doing?", False), ("Hey, and what about Tokyo?", True), ("Hello again, and in Celsius?", True),
    ("Perfect, that's exactly what I needed.", False), ("That is just what I wanted, thanks", False),
    ("Is that what I asked for?", True),
    ("That was really helpful, cheers!", False), ("It was very useful.", False), ("That was great, now do it for Oslo", True),
    ("Was that helpful?", True),
    # thanks and assent however worded (`nexus.gate.social`), and a "that" opening a clause with its subject
    ("Cool, appreciate it.", False), ("Much obliged!", False), ("That works for me.", False), ("Noted.", False),
    ("Fair enough.", False), ("Nice one, cheers", False), ("Do it again.", True), ("Delete that one.", True),
    ("Record that Alice is friends with Bob.", False), ("Remove the observation that Alice likes tennis.", False),
    ("Record that.", True), ("Delete that Alice entry.", True),
    ("Calculate 17 squared.", False), ("Multiply 17 by 23.", False), ("And 17 squared?", True),
    ("Morning!", False), ("Find every file with notes in its name.", False), ("What's its size?", True),
    ("Open the file and read its first line", False),
    # a tag question's "it" is its own subject (probe: it had repeated the delete_relations call before it)
    ("Nice weather today, isn't it?", False), ("Lovely morning today, don't you think?", False),
    ("Delete that one, right?", True),
])
def test_is_follow_up(turn, expected):
    assert is_follow_up(turn) is expected


def test_the_no_tool_threshold_rises_to_what_the_reference_turns_get_on_the_registry(setup):
    from nexus.gate.reference import REFERENCE_TURNS

    reg, slb = setup
    # identity calibration: p_no_tool = sigmoid(-word overlap), 0.5 for a turn sharing no word with any tool; a
    # calibrated threshold of 0.25 would refuse every turn on this registry
    gate = _gate(reg, slb, thresholds=Thresholds(route=0.99, no_tool=0.25, fallback=0.25), no_tool_reference_margin=0.0)
    lowest = min(gate.score(t, slb.search(t, k=gate.k))[1].p_no_tool for t in REFERENCE_TURNS)
    assert 0.27 < lowest <= 0.5 and gate.no_tool_threshold() == pytest.approx(lowest)
    asked = gate.decide("convert currency amount")   # shares words with convert_currency: p_no_tool below the floor
    assert asked.p_no_tool < lowest and asked.action is not Action.NO_TOOL
    assert gate.decide("purple monkey dishwasher").action is Action.NO_TOOL   # no word shared: p 0.5
    # without the reference the calibrated threshold stands, and the request is refused
    plain = _gate(reg, slb, thresholds=Thresholds(route=0.99, no_tool=0.25, fallback=0.25), no_tool_reference=False)
    assert plain.decide("convert currency amount").action is Action.NO_TOOL
    # a calibrated threshold above every reference turn is kept
    high = _gate(reg, slb, thresholds=Thresholds(route=0.99, no_tool=0.9, fallback=0.9))
    assert high.no_tool_threshold() == 0.9 and high.thresholds(0.95).no_tool == 0.9


def test_the_reference_margin_lowers_the_floor_in_log_odds_never_below_the_calibrated_threshold(setup):
    from nexus.gate.reference import no_tool_floor

    reg, slb = setup
    thresholds = Thresholds(route=0.99, no_tool=0.25, fallback=0.25)
    base = _gate(reg, slb, thresholds=thresholds, no_tool_reference_margin=0.0).no_tool_threshold()
    logit = lambda p: math.log(p / (1 - p))
    lowered = _gate(reg, slb, thresholds=thresholds, no_tool_reference_margin=0.5).no_tool_threshold()
    assert logit(base) - logit(lowered) == pytest.approx(0.5)
    assert _gate(reg, slb, thresholds=thresholds, no_tool_reference_margin=50.0).no_tool_threshold() == 0.25
    assert no_tool_floor([0.98], calibrated=0.5, margin=0.0) == 0.98
    assert no_tool_floor([1.0], calibrated=0.5, margin=1.0) == 1.0   # a reference turn at p 1.0 has no log-odds to lower


def test_contextual_turn_keeps_the_turn_whole_and_bounds_context():
    text = contextual_turn("and in Celsius?", ["x " * 400, "weather in Paris"], max_turns=2)
    assert text.endswith("weather in Paris and in Celsius?") and len(text) <= 400
    assert contextual_turn("book a flight to Rome next Monday please", ["weather in Paris"]) == "book a flight to Rome next Monday please"


def test_multi_call_turn_is_shortlisted_with_every_needed_tool(setup):
    reg, slb = setup
    gate = _gate(reg, slb, thresholds=Thresholds(route=0.0, no_tool=0.99, fallback=0.99, multi=0.55), shortlist_k=1)
    d = gate.decide("book a flight to Rome and search hotels in Rome")
    assert d.action is Action.SHORTLIST
    assert {"book_flight", "search_hotels"} <= set(d.shortlist(len(d.candidates)))


def test_no_tool_and_fallback_from_thresholds(setup):
    reg, slb = setup
    # identity calibration: p_no_tool = sigmoid(-max overlap) is about 0.5 for an unrelated turn
    d = _gate(reg, slb, thresholds=Thresholds(route=0.99, no_tool=0.45, fallback=0.4)).decide("tell me a joke about cats")
    assert d.action is Action.NO_TOOL and d.tool is None
    d = _gate(reg, slb, thresholds=Thresholds(route=0.99, no_tool=0.99, fallback=0.45)).decide("tell me a joke about cats")
    assert d.action is Action.FALLBACK


def test_decisions_are_logged_as_json_lines(setup, tmp_path):
    reg, slb = setup
    log_path = tmp_path / "decisions.jsonl"
    gate = _gate(reg, slb, log_path=log_path)
    gate.decide("what time is it in Tokyo")
    gate.decide("and in London?", history=["what time is it in Tokyo"])
    rows = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [r["action"] for r in rows] == ["shortlist", "shortlist"]  # one row per decision, as decided
    assert rows[1]["context"].startswith("what time is it in Tokyo")
    assert rows[0]["candidates"][0] == rows[1]["candidates"][0] == "get_time"


def test_gate_refuses_a_model_calibrated_for_another_embedder(setup):
    reg, slb = setup
    model = GateModel.from_scorer(FakePairScorer(), slb)
    other = SemanticLookasideBuffer(HashEmbedder(dim=32))
    other.sync(reg)
    with pytest.raises(GateModelError, match="embedder"):
        BoundaryGate(other, reg, model)
    reweighted = SemanticLookasideBuffer(HashEmbedder(), HybridWeights(lexical=0.9))
    reweighted.sync(reg)
    with pytest.raises(GateModelError, match="weights"):
        BoundaryGate(reweighted, reg, model)


def test_empty_registry_means_no_tool():
    reg = Registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    d = BoundaryGate(slb, reg, GateModel.from_scorer(FakePairScorer(), slb)).decide("anything")
    assert d.action is Action.NO_TOOL and d.candidates == ()


def test_gate_metrics_keys_and_plots(setup, tmp_path, saved_figures):
    from nexus.gate.bench import gate_metrics

    reg, slb = setup
    queries = [
        {"id": "1", "query": "send an email to Bob", "tool": "send_email"},
        {"id": "2", "query": "what time is it in Tokyo", "tool": "get_time"},
        {"id": "3", "query": "weather forecast for Paris", "tool": "get_weather"},
        {"id": "4", "query": "tell me a joke", "tool": None},
        {"id": "5", "query": "a tool we do not have", "tool": "missing_tool"},
    ]
    result = gate_metrics(slb, reg, queries, _gate(reg, slb), tmp_path)
    assert {"gate_ms_p50", "gate_ms_p99"} <= set(result)
    # every turn is shortlisted (p_top1 0.17-0.30 < route 0.6): nothing routed, so no selective accuracy
    assert result["actions_relevant"]["shortlist"] == 4 and result["actions_no_tool"]["shortlist"] == 1
    assert result["coverage"] == 0.0 and math.isnan(result["selective_accuracy"])
    # the no-tool turn's p_no_tool (0.438) is above three of the four relevant turns' (0.310, 0.417, 0.321; 0.458)
    assert result["no_tool_auroc"] == pytest.approx(0.75)
    # the query whose gold tool is missing is counted (as a wrong top-1), never dropped
    assert result["gate_n_relevant"] == 4 and result["gate_n_no_tool"] == 1
    assert result["gate_n_gold_missing"] == 1 and result["gate_gold_missing_ids"] == ["5"]
    assert result["top1_gate"] == pytest.approx(0.75)
    for plot in ("risk_coverage.png", "reliability.png"):
        assert (tmp_path / plot).read_bytes()[:4] == b"\x89PNG"
    rows = [json.loads(line) for line in (tmp_path / "gate_rows.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["1", "2", "3", "4", "5"]
    # the plots show the relevant turns: by p_top1, the three right top-1s come first, the missing gold's last
    curves = saved_figures.lines("risk_coverage.png")
    assert curves["gate (sorted by p_top1)"] == (pytest.approx([0.25, 0.5, 0.75, 1.0]), pytest.approx([0, 0, 0, 0.25]))
    assert curves["route everything"][1] == pytest.approx([0.25, 0.25])  # 1 - top-1 accuracy
    accuracy_ax, counts_ax = saved_figures.figure("reliability.png").axes
    assert [p.get_height() for p in counts_ax.patches] == [0, 0, 1, 1, 2] + [0] * 10  # p_top1 .17 | .21 | .29, .30
    assert [p.get_height() for p in accuracy_ax.patches] == [0.0, 1.0, 1.0]           # the .17 one is the wrong one
    assert f"ECE {result['ece']:.3f}" in accuracy_ax.get_title()


def test_a_route_on_a_no_tool_turn_counts_against_selective_accuracy(setup):
    """Regression (issue 8): selective accuracy was measured on relevant turns only."""
    from nexus.gate.bench import gate_metrics

    reg, slb = setup
    queries = [{"id": "1", "query": "send an email to Bob", "tool": "send_email"},
               {"id": "2", "query": "weather forecast for Paris", "tool": "get_weather"},
               {"id": "3", "query": "send an email, I said, but never mind", "tool": None}]
    # everything routes (route threshold 0, no NO_TOOL): the no-tool turn's ROUTE is the one error of three
    result = gate_metrics(slb, reg, queries, _gate(reg, slb, Thresholds(route=0.0, no_tool=float("inf"), fallback=float("inf"), multi=2.0)))
    assert result["actions_relevant"]["route"] == 2 and result["actions_no_tool"]["route"] == 1
    assert result["route_on_no_tool"] == 1
    assert result["coverage"] == pytest.approx(1.0)
    assert result["selective_accuracy"] == pytest.approx(2 / 3)
    assert result["selective_accuracy_relevant_only"] == pytest.approx(1.0)


def test_benchmark_refuses_a_gate_trained_on_the_evaluated_tools(setup):
    from nexus.gate.bench import OverlapError, check_disjoint
    from nexus.datasets import tools_fingerprint

    reg, slb = setup
    model = _gate(reg, slb).model
    trained_on = [Tool("Weather_1_GetWeather", "something else", OBJ, "x"),
                  Tool("mail", "Send an email message to a recipient", OBJ, "x")]   # same description as send_email
    model.header = replace(model.header, training={"tools_fingerprint": tools_fingerprint(trained_on)})
    with pytest.raises(OverlapError, match="1 of the 6 evaluated tools"):
        check_disjoint(model, reg)
    assert check_disjoint(model, reg, allow_overlap=True) == ["send_email"]
    model.header = replace(model.header, training={"tools_fingerprint": tools_fingerprint([Tool("x", "y", OBJ, "x")])})
    assert check_disjoint(model, reg) == []


def test_each_request_of_a_several_request_turn_keeps_its_best_tool_in_the_shortlist(setup):
    reg, slb = setup
    thresholds = Thresholds(route=float("inf"), no_tool=float("inf"), fallback=float("inf"), multi=2.0)
    turn = "Book a flight from Paris to Rome on a date. Also convert an amount of money between currencies"
    alone = _gate(reg, slb, thresholds, k=2, shortlist_k=1, shortlist_mass=0.0, per_request=0).decide(turn)
    assert alone.action is Action.SHORTLIST and len(alone.candidates) == 1
    d = _gate(reg, slb, thresholds, k=2, shortlist_k=1, shortlist_mass=0.0, per_request=1).decide(turn)
    keys = [h.key for h in d.candidates]
    assert {"book_flight", "convert_currency"} <= set(keys) and keys[0] == alone.candidates[0].key
    assert len(d.scores) == len(keys) and len(set(keys)) == len(keys)
    # a one-request turn is untouched
    single = _gate(reg, slb, thresholds, k=2, shortlist_k=1, shortlist_mass=0.0, per_request=1).decide("send an email to my boss")
    assert [h.key for h in single.candidates] == ["send_email"]


def test_prescored_logits_stand_in_for_the_cross_encoder_only_for_their_own_text(setup):
    reg, slb = setup
    gate = _gate(reg, slb)
    turn = "send an email to my boss"
    hits = slb.search(turn, k=gate.k)
    plain = gate.decide(turn, hits=hits)
    ahead = gate.prescore(turn, list(slb.keys))
    assert set(ahead.logits) == set(slb.keys)
    same = gate.decide(turn, hits=hits, prescored=ahead)
    assert (same.action, [h.key for h in same.candidates], same.p_top1) == \
        (plain.action, [h.key for h in plain.candidates], plain.p_top1)
    # logits that favour another tool are used when they are this turn's ...
    rigged = Prescored(turn, {k: (5.0 if k == "book_flight" else 0.0) for k in slb.keys})
    assert gate.decide(turn, hits=hits, prescored=rigged).candidates[0].key == "book_flight"
    # ... and ignored when they were scored for another text, or miss a candidate
    assert gate.decide(turn, hits=hits, prescored=replace(rigged, text="book a flight")).candidates[0].key == "send_email"
    partial = Prescored(turn, {"book_flight": 5.0})
    assert gate.decide(turn, hits=hits, prescored=partial).candidates[0].key == "send_email"


def test_a_turn_asking_for_sql_gets_the_registry_tool_that_runs_it_when_the_slb_missed_it():
    """"List all the titles in the books table." had no read_query among the SLB's candidates, so the SQL evidence had
    nothing to put first (`BoundaryGate._evidence_runners`)."""
    read = Tool("read_query", "Execute a SELECT query on the SQLite database", {"type": "object", "properties": {
        "query": {"type": "string", "description": "SELECT SQL query to execute"}}, "required": ["query"]}, "db")
    reg = Registry()
    reg.set_source("t", TOOLS)
    reg.set_source("db", [read])
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    turn = "List all the titles in the books table."
    assert "read_query" not in [h.key for h in slb.search(turn, k=2)]
    d = _gate(reg, slb, k=2).decide(turn)
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "read_query"
    # a turn that asks for no SQL gets no such tool
    assert "read_query" not in [h.key for h in _gate(reg, slb, k=2).decide("send an email to my boss").candidates]


def test_rows_named_by_a_table_the_registry_learnt_get_the_tool_that_runs_sql():
    """"Show all notes whose title mentions Alice." names no table; the demo's sqlite server holds a `notes` table
    (learnt at connect, `Tool.tables`), so the turn asks for a SELECT over it, as "... in the notes table" would."""
    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
              "required": ["query"]}
    read = Tool("read_query", "Execute a SELECT query on the SQLite database", schema, "db")
    turn = "Show all notes whose title mentions Alice."
    decisions = {}
    for tables in ((), ("notes",)):
        reg = Registry()
        reg.set_source("t", TOOLS)
        reg.set_source("db", [replace(read, tables=dict.fromkeys(tables, {}))])
        slb = SemanticLookasideBuffer(HashEmbedder())
        slb.sync(reg)
        assert "read_query" not in [h.key for h in slb.search(turn, k=1)]
        decisions[tables] = _gate(reg, slb, k=1).decide(turn)
    assert "read_query" not in [h.key for h in decisions[()].candidates]
    learnt = decisions[("notes",)]
    assert learnt.action is Action.SHORTLIST and learnt.candidates[0].key == "read_query"


def test_a_short_question_about_someone_named_is_not_a_follow_up():
    """"Who is Alice?" (three words) had been read with the two file requests before it and read notes.txt."""
    from nexus.gate.gate import is_follow_up

    assert not is_follow_up("Who is Alice?") and not is_follow_up("Who's Ada Lovelace?")
    assert is_follow_up("Who is he?") and is_follow_up("And Bob?")


def test_a_short_order_with_its_own_object_is_not_a_follow_up():
    """"List my branches." (three words) had been read with two database turns before it and listed tables."""
    from nexus.gate.gate import is_follow_up

    assert not is_follow_up("List my branches.") and not is_follow_up("Show all tables")
    assert is_follow_up("Show more.") and is_follow_up("Delete that one.") and is_follow_up("List them.")


class CountingScorer(FakePairScorer):
    """FakePairScorer that counts the pairs it scored."""

    def __init__(self):
        self.pairs = 0

    def score(self, turns, docs, keep=True):
        self.pairs += len(turns)
        return super().score(turns, docs, keep)


def _counted_gate(reg, slb, sure, k=10):
    scorer = CountingScorer()
    cal = replace(GateCalibration.identity(), thresholds=Thresholds(route=0.6, no_tool=0.9, fallback=0.7, multi=0.5))
    return BoundaryGate(slb, reg, GateModel.from_scorer(scorer, slb, cal), k=k, sure=sure), scorer


def test_a_turn_the_slb_is_sure_of_skips_the_cross_encoder_on_a_registry_within_k(setup):
    reg, slb = setup
    turn = "send an email message to a recipient"
    hits = slb.search(turn, k=10)
    top, margin = hits[0].score, hits[0].score - hits[1].score
    gate, scorer = _counted_gate(reg, slb, SureRoute(top - 1e-6, margin - 1e-6, 0.99))
    d = gate.decide(turn, hits=hits)
    assert (d.action, [h.key for h in d.candidates], d.slb_sure, d.p_top1) == (Action.ROUTE, ["send_email"], True, 0.99)
    assert scorer.pairs == 0
    # a top score or a margin short of the rule's: the cross-encoder reads every candidate, as without the rule
    for rule in (SureRoute(top + 1e-3, 0.0, 0.99), SureRoute(0.0, margin + 1e-3, 0.99)):
        gate, scorer = _counted_gate(reg, slb, rule)
        d = gate.decide(turn, hits=hits)
        plain = _gate(reg, slb).decide(turn, hits=hits)
        assert not d.slb_sure and scorer.pairs == len(TOOLS)
        assert (d.action, [h.key for h in d.candidates], d.p_top1) == (plain.action, [h.key for h in plain.candidates], plain.p_top1)
    # more tools than the gate reads: the cascade is off whatever the scores
    gate, scorer = _counted_gate(reg, slb, SureRoute(-1e9, -1e9, 0.99), k=3)
    assert not gate.may_skip() and not gate.decide(turn, hits=hits[:3]).slb_sure and scorer.pairs == 3


def test_the_cascade_leaves_to_the_gate_the_turns_its_own_rules_may_decide_otherwise(setup):
    reg, slb = setup
    gate, _ = _counted_gate(reg, slb, SureRoute(-1e9, -1e9, 0.99))  # every score is sure enough: only the rules count

    def sure(turn):
        return gate.sure(turn, contextual_turn(turn, [], 2), slb.search(turn, k=10))

    assert sure("send an email to Bob")
    assert not sure("Compute 12 * (3 + 4) for me")                                # evidence: an expression
    assert not sure("Send an email to Bob. Also book a flight to Paris on Monday")  # requests with other top tools
    assert sure("Send an email message to Bob. Also send an email message to Alice")  # ... or the same one
    assert not sure("Is there any new email for me?")                             # a question about state
    follow = "and to Alice?"
    assert not gate.sure(follow, contextual_turn(follow, ["send an email to Bob"], 2), slb.search(follow, k=10))
    assert not gate.decide(follow, history=["send an email to Bob"]).slb_sure


def test_the_cascade_is_on_by_default_and_off_with_its_setting(setup, monkeypatch):
    from nexus.config import GateSettings

    reg, slb = setup
    model = GateModel.from_scorer(FakePairScorer(), slb, GateCalibration.identity())
    assert BoundaryGate.from_settings(slb, reg, model, GateSettings()).sure_route == SureRoute(0.80, 0.20, 0.9906)
    monkeypatch.setenv("NEXUS_GATE_SURE", "off")
    assert BoundaryGate.from_settings(slb, reg, model, GateSettings()).sure_route is None
