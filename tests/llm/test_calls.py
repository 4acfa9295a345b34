"""The LLM path on a scripted backend: which prompt and grammar each decision builds, validation, the one
bounded repair, the FALLBACK after it, plain answers, and overflow handling."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from nexus.gate.decision import Action, Decision
from nexus.llm.base import ContextOverflow
from nexus.llm.calls import ToolCaller, rank_prior
from nexus.llm.grammars import arguments_gbnf
from nexus.llm.prompts import Exchange
from nexus.llm.scripted import ScriptedBackend
from nexus.registry import Registry, Tool
from nexus.slb.index import Hit

WEATHER = Tool("get_weather", "Current weather for a city.", {
    "type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                                     "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["city"]}, "s")
EMAIL = Tool("send_email", "Send an email.", {
    "type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
    "required": ["to", "subject"]}, "s")
TIME = Tool("get_time", "Current time in a timezone.", {
    "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}, "s")


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.set_source("s", [WEATHER, EMAIL, TIME])
    return reg


def decision(action: Action, *keys: str) -> Decision:
    return Decision(action, tuple(Hit(k, 1.0 - i / 10, 0.5, 0.0) for i, k in enumerate(keys)), p_top1=0.9)


def test_route_shows_only_the_routed_schema_and_constrains_its_arguments(registry):
    backend = ScriptedBackend(arguments=['{"city": "Paris"}'])
    call = ToolCaller(backend, registry).call("weather in Paris?", decision(Action.ROUTE, "get_weather", "get_time"))
    assert (call.tool, call.arguments, call.valid, call.path, call.attempts) == (
        "get_weather", {"city": "Paris"}, True, Action.ROUTE, 1)
    kinds = [kind for kind, _, _ in backend.calls]
    assert kinds == ["generate"]  # the routed tool is forced: no name choice
    _, prompt, grammar = backend.calls[0]
    assert grammar == arguments_gbnf(WEATHER.input_schema)
    assert "get_weather(city:str, days?:int) Current weather for a city." in prompt.text
    assert "get_time(" not in prompt.text and "send_email(" not in prompt.text.split("Tools:\n")[-1]
    assert prompt.text.endswith("Request: weather in Paris?\nTool: get_weather\nArguments:")
    assert call.t_first_arg is not None and call.prompt_tokens == backend.count_tokens(prompt)


def test_shortlist_shows_signatures_and_lets_the_model_choose(registry):
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_time"])
    call = ToolCaller(backend, registry, shortlist_view="two-prompts").call("time in Tokyo?", decision(Action.SHORTLIST, "get_weather", "get_time"))
    assert (call.tool, call.arguments, call.path) == ("get_time", {"timezone": "Asia/Tokyo"}, Action.SHORTLIST)
    (kind, prompt, options), (_, args_prompt, grammar) = backend.calls
    assert kind == "choose" and options == ("get_time", "get_weather")  # best-ranked last, next to the request
    prior = backend.priors[0]
    assert prior[-1] == pytest.approx(0.9) and sum(prior) == pytest.approx(1.0)  # the gate's p_top1 on its top pick
    tools_block = prompt.text.split("Tools:\n")[-1]
    assert "get_time(timezone)" in tools_block and "  timezone:" not in tools_block  # signatures, not schemas
    # with two prompts, the picked tool's arguments are written against its full schema alone (after the same request)
    assert args_prompt.text.endswith("get_time(timezone:str) Current time in a timezone.\n  timezone: str\n"
                                     "Request: time in Tokyo?\nTool: get_time\nArguments:")
    assert "get_weather(" not in args_prompt.text.split("Tools:\n")[-1]
    assert grammar == arguments_gbnf(TIME.input_schema, "time in Tokyo?")


def test_a_shortlist_pick_writes_its_arguments_in_the_same_prompt(registry):
    """One prompt per SHORTLIST turn (the default): the arguments continue the name choice's prompt, so every token,
    the request's included, is computed once (with "two-prompts" the request is prefilled again behind the picked
    tool's schema); the grammar is still the picked tool's full schema."""
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_time"])
    caller = ToolCaller(backend, registry)
    call = caller.call("time in Tokyo?", decision(Action.SHORTLIST, "get_weather", "get_time", "send_email"))
    assert (call.tool, call.arguments, call.valid, call.path, call.attempts) == (
        "get_time", {"timezone": "Asia/Tokyo"}, True, Action.SHORTLIST, 1)
    (kind, prompt, options), (_, args_prompt, grammar) = backend.calls
    assert kind == "choose" and options == ("send_email", "get_time", "get_weather")  # best-ranked last
    assert args_prompt == caller.prompts.arguments_prompt(prompt, "get_time")  # the same prompt, continued
    assert "  timezone:" not in args_prompt.text.split("Tools:\n")[-1]  # signatures only
    assert call.prefilled_tokens == backend.count_tokens(args_prompt)  # every token computed once
    assert grammar == arguments_gbnf(TIME.input_schema, "time in Tokyo?")


def test_an_unknown_shortlist_view_is_an_error(registry):
    from nexus.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown shortlist view 'schemas'; choose one of one-prompt, two-prompts"):
        ToolCaller(ScriptedBackend(), registry, shortlist_view="schemas")


def test_invalid_arguments_get_one_repair_with_the_full_schema(registry):
    backend = ScriptedBackend(arguments=['{"city": "Paris", "days": 30}', '{"city": "Paris", "days": 3}'])
    caller = ToolCaller(backend, registry, normalise=False)  # (with it, the unstated "days": 3 would be dropped)
    call = caller.call("weather in Paris for 30 days", decision(Action.ROUTE, "get_weather"))
    assert call.valid and call.arguments == {"city": "Paris", "days": 3} and call.attempts == 2
    assert call.path is Action.ROUTE and "days: 30 is greater than the maximum of 7" in call.errors[0]
    repair_prompt = backend.calls[1][1].text
    assert "Error: days: 30 is greater than the maximum of 7" in repair_prompt and "  days:" in repair_prompt


def test_a_pinned_path_is_no_value_for_the_tools_other_parameters():
    """"Stage notes.txt in /ws/repo." had staged ["/ws/repo"]: the repository the set-up pins (`Tool.pinned`) was
    offered as one of the paths the request writes. The grammar now offers notes.txt alone; a path inside the
    repository stays a choice."""
    from dataclasses import replace

    add = replace(Tool("git_add", "Adds file contents to the staging area", {"type": "object", "properties": {
        "files": {"type": "array", "items": {"type": "string"}}}, "required": ["files"]}, "git"), pinned={"repo_path": "/ws/repo"})
    reg = Registry()
    reg.set_source("git", [add])
    for turn, allowed in (("Stage notes.txt in /ws/repo.", ['["notes.txt"]']),
                          ("Stage /ws/repo/notes.md.", ['["/ws/repo/notes.md"]'])):
        backend = ScriptedBackend(arguments=['{"files": ["notes.txt"]}'])
        ToolCaller(backend, reg).call(turn, decision(Action.ROUTE, "git_add"))
        grammar = backend.calls[0][2]
        rule = next(line for line in grammar.splitlines() if line.startswith("files ::= "))
        assert [json.loads(json.loads(alt)) for alt in rule.split(" ::= ")[1].split(" | ")] == [json.loads(a) for a in allowed]


class LoopingBackend(ScriptedBackend):
    """A scripted backend whose first grammar-constrained decode runs into a loop."""

    def generate(self, prompt, *, grammar=None, max_tokens=256, stop=()):
        out = super().generate(prompt, grammar=grammar, max_tokens=max_tokens, stop=stop)
        looped = grammar is not None and sum(kind == "generate" and g is not None for kind, _, g in self.calls) == 1
        return replace(out, finished=not looped, looped=looped)


def test_a_looped_attempt_is_repaired_under_a_grammar_of_the_parameters_the_request_asks_for(registry):
    backend = LoopingBackend(arguments=['{"city": "Paris", "days": 11111111', '{"city": "Paris"}'])
    call = ToolCaller(backend, registry).call("weather in Paris?", decision(Action.ROUTE, "get_weather"))
    assert call.valid and call.arguments == {"city": "Paris"} and call.attempts == 2
    assert "loop" in call.errors[0]
    (_, _, first), (_, _, repair) = [c for c in backend.calls if c[0] == "generate"]
    assert first == arguments_gbnf(WEATHER.input_schema, "weather in Paris?")
    assert repair == arguments_gbnf(WEATHER.input_schema, "weather in Paris?", written_only=True) != first
    assert "days" in first and "days" not in repair  # the optional parameter the request never mentions is gone


def test_a_failed_repair_falls_back_to_all_schemas(registry):
    backend = ScriptedBackend(arguments=["{}", '{"to": 5}', '{"city": "Paris"}'], choices=["get_weather"])
    call = ToolCaller(backend, registry).call("weather in Paris?", decision(Action.SHORTLIST, "send_email", "get_weather"),
                                              fallback_order=lambda: ["get_time", "get_weather", "send_email"])
    assert call.valid and call.tool == "get_weather" and call.path is Action.FALLBACK and call.attempts == 3
    assert len(call.errors) == 2
    fallback_prompt = backend.calls[-2][1]  # the name choice of the fallback attempt
    for key in ("get_weather", "send_email", "get_time"):
        assert f"{key}(" in fallback_prompt.text.split("Tools:\n")[-1]
    # ranked candidates, then the rest in the given order — shown reversed, best next to the request
    block = fallback_prompt.text.split("Tools:\n")[-1]
    assert block.index("get_time(") < block.index("get_weather(") < block.index("send_email(")


def test_a_fallback_decision_times_its_own_call_and_is_not_truncated_when_everything_fits(registry):
    import time

    start = time.perf_counter()
    backend = ScriptedBackend(arguments=['{"city": "Paris"}'], choices=["get_weather"])
    call = ToolCaller(backend, registry).call("weather in Paris?", Decision(Action.FALLBACK, (Hit("get_weather", 1, 1, 0),)))
    assert call.valid and call.path is Action.FALLBACK and call.attempts == 1
    assert call.fallback_truncated is False
    assert start < call.t_call_first_arg == call.t_first_arg <= call.t_end <= time.perf_counter()


def test_everything_invalid_returns_an_invalid_call_with_the_reasons(registry):
    backend = ScriptedBackend(arguments=["not json"], choices=["get_weather"])
    call = ToolCaller(backend, registry).call("weather?", decision(Action.ROUTE, "get_weather"))
    assert not call.valid and call.path is Action.FALLBACK and call.attempts == 3
    assert all(e.startswith("not JSON") for e in call.errors) and len(call.errors) == 3


def test_cut_off_arguments_are_invalid(registry):
    caller = ToolCaller(ScriptedBackend(), registry, max_arg_tokens=8)
    assert caller.validate("get_weather", '{"city": "Par', finished=False) == (None, "the arguments were cut off after 8 tokens")


def test_no_tool_gives_a_plain_answer(registry):
    backend = ScriptedBackend(answers=["You're welcome!\nRequest: more"])
    call = ToolCaller(backend, registry).call("thanks!", Decision(Action.NO_TOOL, (), p_no_tool=0.97))
    assert (call.tool, call.answer, call.valid, call.t_first_arg) == (None, "You're welcome!", True, None)
    assert backend.calls[0][2] is None  # no grammar


def test_fallback_that_does_not_fit_keeps_the_best_ranked_schemas_and_says_so(registry, caplog):
    small = ScriptedBackend(arguments=['{"city": "Paris"}'], choices=["get_weather"], n_ctx=1)
    caller = ToolCaller(small, registry, max_arg_tokens=16)
    full = small.count_tokens(caller.prompts.call_prompt("weather?", caller.tool_lines(registry.keys(), "schema")))
    small.n_ctx = full + 16 + 64 - 5  # all three schemas are just too many
    call = caller.call("weather?", Decision(Action.FALLBACK, (Hit("get_weather", 1, 1, 0),)))
    assert call.valid and call.fallback_truncated is True and "do not fit" in caplog.text
    assert "get_weather(" in small.calls[0][1].text


def test_overflow_is_an_error_not_a_truncation(registry):
    backend = ScriptedBackend(n_ctx=10)
    with pytest.raises(ContextOverflow, match="needs .* tokens but the context holds 10"):
        ToolCaller(backend, registry).call("weather in Paris?", decision(Action.ROUTE, "get_weather"))


def test_arguments_are_normalised_and_unstated_optional_ones_dropped_before_validation(registry):
    backend = ScriptedBackend(arguments=['{"timezone": "Tokyo"}', '{"city": "Oslo", "days": 5}'])
    caller = ToolCaller(backend, registry)
    call = caller.call("time in Tokyo?", decision(Action.ROUTE, "get_time"))
    assert call.arguments == {"timezone": "Asia/Tokyo"} and call.valid
    call = caller.call("weather in Oslo", decision(Action.ROUTE, "get_weather"))
    assert call.arguments == {"city": "Oslo"} and call.valid  # "days": 5 is not in the request


def test_numbers_the_request_states_constrain_required_numbers_in_the_grammar(registry):
    forecast = Tool("forecast", "Forecast.", {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "hour": {"type": "integer"}}, "required": ["days"]}, "s")
    registry.set_source("f", [forecast])
    backend = ScriptedBackend(arguments=['{"days": 3}'])
    ToolCaller(backend, registry).call("weather in Oslo, 3 or 4 please", decision(Action.ROUTE, "forecast"))
    rules = dict(line.split(" ::= ", 1) for line in backend.calls[-1][2].strip().splitlines())
    assert rules["days"] == '"3" | "4"'  # integers only: 0.03 and 0.04 are not integers
    assert "integer" in rules["hour-kv"]  # optional: left free


class RefusingBackend(ScriptedBackend):
    """A backend whose grammar parser refuses every grammar but the any-object one (as llama.cpp refuses some
    schemas' patterns)."""

    def generate(self, prompt, *, grammar=None, max_tokens=256, stop=()):
        from nexus.errors import GrammarError

        if grammar is not None and grammar != arguments_gbnf({"type": "object"}):
            raise GrammarError("llama.cpp rejected the grammar")
        return super().generate(prompt, grammar=grammar, max_tokens=max_tokens, stop=stop)


def test_a_refused_grammar_falls_back_to_any_object_and_is_still_validated(registry):
    backend = RefusingBackend(arguments=['{"city": "Paris"}'])
    call = ToolCaller(backend, registry).call("weather in Paris?", decision(Action.ROUTE, "get_weather"))
    assert call.valid and call.tool == "get_weather" and call.arguments == {"city": "Paris"}
    grammars = [g for kind, _, g in backend.calls if kind == "generate"]
    assert grammars == [arguments_gbnf({"type": "object"})]  # only the fallback grammar reached the decoder
    # the schema still decides: an object the tool's schema refuses is repaired, then falls back, never accepted
    bad = RefusingBackend(arguments=['{"town": "Paris"}'], choices=["get_weather"])
    call = ToolCaller(bad, registry).call("weather in Paris?", decision(Action.ROUTE, "get_weather"))
    assert not call.valid and call.errors


def test_a_looping_generation_is_rejected_as_a_loop_not_as_the_token_cap():
    from nexus.llm.calls import ToolCaller, rank_prior
    from nexus.registry import Registry, Tool

    reg = Registry()
    reg.set_source("s", [Tool("ping", "Ping a host", {"type": "object", "properties": {"host": {"type": "string"}}}, "s")])
    caller = ToolCaller(None, reg, max_arg_tokens=64)
    assert "loop" in caller.validate("ping", '{"host": "lalala', finished=False, looped=True)[1]
    assert caller.validate("ping", '{"host": "lalala', finished=False)[1] == "the arguments were cut off after 64 tokens"


CONVERT = Tool("convert_time", "Convert a time between time zones.", {
    "type": "object", "properties": {
        "source_timezone": {"type": "string", "description": "Source IANA timezone name"},
        "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
        "target_timezone": {"type": "string", "description": "Target IANA timezone name"}},
    "required": ["source_timezone", "time", "target_timezone"]}, "s")
NOW = Tool("get_current_time", "Current time in a time zone.", {
    "type": "object", "properties": {"timezone": {"type": "string", "description": "IANA timezone name"}},
    "required": ["timezone"]}, "s")


@pytest.mark.parametrize("turn, weighted", [("What time is it in Tokyo right now?", True),
                                            ("Convert 3pm Tokyo time to London time", False)])
def test_a_shortlisted_tool_that_would_invent_a_time_is_weighted_down(turn, weighted):
    reg = Registry()
    reg.set_source("s", [CONVERT, NOW])
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_current_time"])
    ToolCaller(backend, reg).call(turn, decision(Action.SHORTLIST, "convert_time", "get_current_time"))
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))  # options best-ranked last
    assert sum(prior.values()) == pytest.approx(1.0)
    if weighted:  # convert_time needs a clock time the request does not state: 0.9 * 0.1 against 0.1
        assert prior["convert_time"] == pytest.approx(0.09 / 0.19) and prior["get_current_time"] > prior["convert_time"]
    else:  # convert_time can be filled from the request; get_current_time has no room for 3pm nor a second zone: two
        # reasons, so 0.1 * 0.1 of its share
        assert prior["convert_time"] == pytest.approx(0.9 / 0.901)


def test_a_candidate_the_gate_scored_far_below_keeps_almost_no_share_of_the_prior(registry):
    """The demo's "What time is it in Tokyo right now?" went to `git_log`: fifth of five, its gate score 6.6 below the
    second's, yet rank alone had left it a share close to the time tools' own."""
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_time"])
    hits = tuple(Hit(k, 0.5, 0.5, 0.0) for k in ("get_weather", "get_time", "send_email"))
    scored = Decision(Action.SHORTLIST, hits, p_top1=0.6, scores=(11.2, 9.6, 3.0))
    ToolCaller(backend, registry).call("time in Tokyo?", scored)
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))
    assert prior["get_weather"] == pytest.approx(0.6) and sum(prior.values()) == pytest.approx(1.0)
    assert prior["send_email"] < 1e-3 < prior["get_time"]  # by rank alone it would keep 0.4 * e^-2 / (e^-1 + e^-2) = 0.108
    # without scores (a gate that gives none), rank alone: the third keeps (1 - 0.9) * e^-2 / (e^-1 + e^-2)
    plain = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_time"])
    ToolCaller(plain, registry).call("time in Tokyo?", decision(Action.SHORTLIST, "get_weather", "get_time", "send_email"))
    unscored = dict(zip(plain.calls[0][2], plain.priors[0]))
    assert unscored["send_email"] == pytest.approx(0.1 * math.exp(-2) / (math.exp(-1) + math.exp(-2)))


def test_no_shortlisted_tool_gets_more_of_the_prior_than_one_the_gate_ranked_above_it(registry):
    """With p_top1 under ~0.37, rank shares alone gave the second tool more than the first ("What are my unstaged
    edits?" had git_commit 0.58 against the gate's first, git_diff_unstaged, 0.24)."""
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_time"])
    hits = tuple(Hit(k, 0.5, 0.5, 0.0) for k in ("get_weather", "get_time", "send_email"))
    ToolCaller(backend, registry).call("time in Tokyo?", Decision(Action.SHORTLIST, hits, p_top1=0.2))
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))
    assert prior["get_weather"] >= prior["get_time"] >= prior["send_email"] and sum(prior.values()) == pytest.approx(1.0)
    assert prior["get_weather"] == pytest.approx(prior["get_time"])  # 0.2 against 0.8 * e^-1 / (e^-1 + e^-2), cut to 0.2


@pytest.mark.parametrize("turn, weighted", [("Show the latest 3 commits of the repository at /srv/app", True),
                                            ("Show the latest 3 commits of google.com in the U.S.", False)])
def test_a_tool_that_takes_no_path_is_weighted_down_when_the_request_writes_one(turn, weighted):
    log = Tool("git_log", "Shows the commit logs.", {"type": "object", "properties": {
        "repo_path": {"type": "string"}, "max_count": {"type": "integer"}}, "required": ["repo_path"]}, "s")
    remote = Tool("get_commit", "Get details for a commit from a GitHub repository.", {"type": "object", "properties": {
        "owner": {"type": "string"}, "repo": {"type": "string"}, "branch": {"type": "string"}}, "required": ["owner", "repo", "branch"]}, "s")
    prior = _shortlist_prior([log, remote], turn, "get_commit", "git_log", '{"repo_path": "/srv/app"}')
    if weighted:
        assert prior["git_log"] > prior["get_commit"] and prior["get_commit"] == pytest.approx(0.09 / 0.19)
    else:  # a domain or an abbreviation is no path: the gate's prior as it is
        assert prior["get_commit"] == pytest.approx(0.9)


@pytest.mark.parametrize("turn, weighted", [("What's inside the repo folder in my workspace?", True),
                                            ("What's inside my workspace folder?", False)])
def test_a_tool_that_takes_no_path_is_weighted_down_when_the_request_names_a_folder(turn, weighted):
    """Probe "What's inside the repo folder in my workspace?" had listed the allowed directories (no path) instead."""
    listing = Tool("list_directory", "List the files in a directory.", {"type": "object", "properties": {
        "path": {"type": "string"}}, "required": ["path"]}, "s")
    allowed = Tool("list_allowed_directories", "List the directories this server may access.",
                   {"type": "object", "properties": {}}, "s")
    prior = _shortlist_prior([listing, allowed], turn, "list_allowed_directories", "list_directory", '{"path": "repo"}')
    if weighted:
        assert prior["list_directory"] > prior["list_allowed_directories"]
    else:  # the server's own root is no folder to place
        assert prior["list_allowed_directories"] == pytest.approx(0.9)


@pytest.mark.parametrize("turn, weighted", [("Search my knowledge graph for notes about Alice", True),
                                            ("Look in the knowledge graph for anything about violin.", True),  # a topic
                                            ("Tell me about everything in my knowledge graph", False),
                                            ("What does the knowledge graph know about Acme?", True),
                                            ("Show me everything in my knowledge graph", False),
                                            ("Show me everything I've put in my knowledge graph", False),
                                            ("Show me everything in my Knowledge Graph", False)])
def test_a_tool_that_takes_nothing_is_weighted_down_when_the_request_names_something_to_work_on(turn, weighted):
    read = Tool("read_graph", "Read the entire knowledge graph.", {"type": "object", "properties": {}}, "s")
    search = Tool("search_nodes", "Search for nodes in the knowledge graph.", {"type": "object", "properties": {
        "query": {"type": "string"}}, "required": ["query"]}, "s")
    reg = Registry()
    reg.set_source("s", [read, search])
    backend = ScriptedBackend(arguments=["{}"], choices=["read_graph"])
    ToolCaller(backend, reg).call(turn, decision(Action.SHORTLIST, "read_graph", "search_nodes"))
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))
    if weighted:  # "Alice" is nothing read_graph() could take: it loses its prior twice over (0.9 * 0.01 against
        # 0.1; once, 0.093 had stayed above 0.07 when the gate gave read_graph 0.93), and its place next to the request
        assert prior["read_graph"] == pytest.approx(0.009 / 0.109) and prior["search_nodes"] > prior["read_graph"]
        assert backend.calls[0][2] == ("read_graph", "search_nodes")  # options best-first last
        assert backend.calls[0][1].text.index("search_nodes(") > backend.calls[0][1].text.index("read_graph(")
    else:  # nothing named ("I've" is the user), or only words of the tools' own texts ("Knowledge Graph"): the gate's prior
        assert prior["read_graph"] == pytest.approx(0.9)
        assert backend.calls[0][2] == ("search_nodes", "read_graph")


@pytest.mark.parametrize("turn, weighted", [("Is there anything to commit in my repository?", True),
                                            ("Show me what changed in the last commit.", True),
                                            ("Commit my changes with the message fix", False),
                                            ("Can you commit my changes?", False)])
def test_a_question_weighs_down_a_tool_its_server_marks_as_changing_something(turn, weighted):
    """MCP annotations: git_commit says readOnlyHint false, git_status true; "Is there anything to commit?" had called
    git_commit. Without a read-only tool beside it, or without annotations, nothing changes."""
    commit = Tool("git_commit", "Records changes to the repository", {"type": "object", "properties": {
        "message": {"type": "string"}}, "required": ["message"]}, "s", annotations={"readOnlyHint": False})
    status = Tool("git_status", "Shows the working tree status", {"type": "object", "properties": {}}, "s",
                  annotations={"readOnlyHint": True})
    prior = _shortlist_prior([commit, status], turn, "git_commit", "git_status")
    if weighted:  # the gate's 0.9 weighted by 0.01 (`WRITE_FOR_QUESTION`)
        assert prior["git_commit"] == pytest.approx(0.009 / 0.109) and prior["git_status"] > prior["git_commit"]
    else:
        assert prior["git_commit"] == pytest.approx(0.9)
    plain = [Tool(t.name, t.description, t.input_schema, "s") for t in (commit, status)]  # no annotations
    assert _shortlist_prior(plain, turn, "git_commit", "git_status")["git_commit"] == pytest.approx(0.9)


_ENTITY = {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}, "required": ["names"]}
_REPO = {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}
_CREATE = Tool("create_entities", "Create entities in the knowledge graph", _ENTITY, "s")
_DELETE = Tool("delete_entities", "Delete entities from the knowledge graph", _ENTITY, "s")
_STAGED = Tool("git_diff_staged", "Shows changes that are staged for commit", _REPO, "s")
_UNSTAGED = Tool("git_diff_unstaged", "Shows changes in the working directory that are not yet staged", _REPO, "s")
_FILE = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path"]}
_READ = Tool("read_file", "Read the complete contents of a file", _FILE, "s")
_WRITE = Tool("write_file", "Create a new file or overwrite an existing one", _FILE, "s")


@pytest.mark.parametrize("tools, turn, weighted", [
    ((_CREATE, _DELETE), "Remove Acme from the knowledge graph.", "create_entities"),
    ((_CREATE, _DELETE), "Please delete Acme from the graph", "create_entities"),
    ((_CREATE, _DELETE), "Add Acme to the knowledge graph.", "delete_entities"),
    ((_CREATE, _DELETE), "Show me Acme", None),
    ((_STAGED, _UNSTAGED), "What did I change that isn't staged?", "git_diff_staged"),
    ((_STAGED, _UNSTAGED), "Show the changes I haven't staged yet.", "git_diff_staged"),
    ((_STAGED, _UNSTAGED), "Show me the diff.", None),  # "What have I staged?": the un- form held back (below)
    # held-out set 28: a request to save had called read_file, listed above write_file
    ((_READ, _WRITE), "Save 'call the plumber' in a file named reminders.txt.", "read_file"),
    ((_READ, _WRITE), "Display the text of notes.txt.", None)])
def test_a_tool_named_against_what_the_request_asks_is_weighted_down(tools, turn, weighted):
    """"Remove Acme from the knowledge graph." had called create_entities, listed above delete_entities, and "What did
    I change that isn't staged?" git_diff_staged, listed above git_diff_unstaged: the name that creates what the
    request removes (or the other way round), or carries what it says is not so, loses its share of the gate's prior."""
    first, second = (tool.name for tool in tools)
    prior = _shortlist_prior(list(tools), turn, first, second)
    if weighted == first:  # the gate's 0.9 on the first, weighted by 0.1 (or less: "Remove Acme from the knowledge
        # graph." is also a thing named to forget, and the tool that removes things goes first; `memory.asks_to_forget`)
        assert prior[first] <= 0.09 / 0.19 + 1e-9 and prior[second] > prior[first]
    elif weighted == second:
        assert prior[second] == pytest.approx(0.01 / 0.91)
    else:
        assert prior[first] == pytest.approx(0.9)


@pytest.mark.parametrize("turn, weighted", [("If it is 14:30 in Berlin, what time is it in New York?", True),
                                            ("When it's 6pm in Sydney, what time is it in Los Angeles?", True),
                                            ("What time is it in Berlin right now?", False)])
def test_a_tool_with_no_place_for_a_stated_time_is_weighted_down_when_a_listed_one_takes_it(turn, weighted):
    """get_current_time(Berlin) had answered "If it is 14:30 in Berlin, what time is it in New York?", dropping 14:30."""
    prior = _shortlist_prior([NOW, CONVERT], turn, "get_current_time", "convert_time")
    if weighted:  # no room for the time nor the second zone: two reasons, 0.1 * 0.1 of its share
        assert prior["get_current_time"] == pytest.approx(0.009 / 0.109) and prior["convert_time"] > prior["get_current_time"]
    else:  # no time written: it is convert_time that would invent one (`unstated_required`)
        assert prior["get_current_time"] == pytest.approx(0.9 / 0.91)
    no_time = Tool("world_clock", "Current local time in a time zone.", {"type": "object", "properties": {
        "zone": {"type": "string", "description": "IANA zone"}}, "required": ["zone"]}, "s")
    # no listed tool takes a time: nothing to prefer
    assert _shortlist_prior([NOW, no_time], turn, "get_current_time", "world_clock")["get_current_time"] == pytest.approx(0.9)


@pytest.mark.parametrize("turn, weighted", [("And in Lisbon?", False), ("Convert that to Lisbon time.", True)])
def test_a_follow_up_that_states_its_own_zone_counts_that_zone_alone(turn, weighted):
    """"And in Lisbon?" after "What time is it in Vancouver?" had gone to convert_time: read with the turn before, the
    request held two zones, so get_current_time (room for one) was weighed down like convert_time (a time it would
    invent). A continuation's own zone replaces the one before; a turn that builds on it ("Convert that to …") keeps both."""
    reg = Registry()
    reg.set_source("s", [NOW, CONVERT])
    backend = ScriptedBackend(arguments=["{}"], choices=["convert_time"])
    history = [Exchange("What time is it in Vancouver?", "get_current_time", {"timezone": "America/Vancouver"})]
    ToolCaller(backend, reg).call(turn, decision(Action.SHORTLIST, "get_current_time", "convert_time"), history)
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))
    if weighted:  # both weighed down (room for zones, an invented time): the gate's prior stands
        assert prior["get_current_time"] == pytest.approx(0.9)
    else:  # only convert_time would invent a time
        assert prior["get_current_time"] == pytest.approx(0.9 / 0.91)


_FILE_INFO = Tool("get_file_info", "Retrieve metadata about a file or directory.", {"type": "object", "properties": {
    "path": {"type": "string"}}, "required": ["path"]}, "s", annotations={"readOnlyHint": True})
_ADD = Tool("git_add", "Adds file contents to the staging area", {"type": "object", "properties": {
    "files": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, "required": ["files"]}, "s",
    annotations={"readOnlyHint": False})
_READ_ONE = Tool("read_file", "Read the complete contents of a file.", _FILE_INFO.input_schema, "s",
                 annotations={"readOnlyHint": True})
_READ_MANY = Tool("read_multiple_files", "Read the contents of multiple files simultaneously.", {"type": "object",
                  "properties": {"paths": {"type": "array", "items": {"type": "string"}}}, "required": ["paths"]}, "s",
                  annotations={"readOnlyHint": True})
_MOVE = Tool("move_file", "Move or rename files and directories.", {"type": "object", "properties": {
    "source": {"type": "string"}, "destination": {"type": "string"}}, "required": ["source", "destination"]}, "s")


@pytest.mark.parametrize("tools, turn, weighted", [
    ((_ADD, _FILE_INFO), "Commit README.md.", None),  # a list of files is a place for a path
    ((_READ_ONE, _READ_MANY), "Open notes.txt and repo/notes.md at the same time.", "read_file"),
    ((_READ_ONE, _READ_MANY), "Open notes.txt.", None),
    ((_MOVE, _READ_ONE), "Rename notes.txt to old_notes.txt.", "read_file")])  # move_file: room for both
def test_a_tool_without_room_for_the_paths_the_request_writes_is_weighted_down(tools, turn, weighted):
    """Held-out set 20: "Stage README.md." had gone to get_file_info (git_add's `files` list was no place for a path),
    and "Open notes.txt and repo/notes.md at the same time." to read_file (room for one path of the two)."""
    first, second = (tool.name for tool in tools)
    prior = _shortlist_prior(list(tools), turn, first, second)
    if weighted == first:
        assert prior[first] == pytest.approx(0.09 / 0.19) and prior[second] > prior[first]
    elif weighted == second:
        assert prior[second] == pytest.approx(0.01 / 0.91)
    else:
        assert prior[first] == pytest.approx(0.9)


_BRANCH = Tool("git_create_branch", "Creates a new branch from an optional base branch", {"type": "object", "properties": {
    "branch_name": {"type": "string"}}, "required": ["branch_name"]}, "s", pinned={"repo_path": "/ws/repo"})
_MKDIR = Tool("create_directory", "Create a new directory or ensure a directory exists.", {"type": "object",
              "properties": {"path": {"type": "string"}}, "required": ["path"]}, "s")


@pytest.mark.parametrize("turn, weighted", [
    ("Create a branch called feature-x in the repository /ws/repo", None),
    ("Create a branch called feature-x in the repository /ws/repo.", None),  # set 64: the full stop is no part of it
    ("Create a branch called feature-x in /ws/other", "git_create_branch")])
def test_a_path_the_request_writes_for_a_pinned_parameter_is_no_path_to_place(turn, weighted):
    """The demo pins mcp-server-git's `repo_path` (`demo.unpinned`): "Create a branch called feature-x in the repository
    {repo}" had weighed git_create_branch down for the path, and create_directory made a folder in the repository."""
    prior = _shortlist_prior([_BRANCH, _MKDIR], turn, "git_create_branch", "create_directory")
    if weighted is None:
        assert prior["git_create_branch"] == pytest.approx(0.9)
    else:
        assert prior["git_create_branch"] < prior["create_directory"]


def routed_call(tool: Tool, arguments: str, turn: str):
    """The call the LLM path makes when the gate routes `turn` to `tool` and the model writes `arguments`."""
    reg = Registry()
    reg.set_source("s", [tool])
    return ToolCaller(ScriptedBackend(arguments=[arguments]), reg).call(turn, decision(Action.ROUTE, tool.name))


def test_an_edit_takes_the_replacement_the_request_states():
    """"In notes.txt, change Acme to Globex." had reached edit_file with `oldText: "G"`; the stated pair is written in,
    and the call is valid (a destructive call whose values the request states is not held back)."""
    edit = Tool("edit_file", "Make line-based edits to a text file.", {"type": "object", "properties": {
        "path": {"type": "string"}, "edits": {"type": "array", "items": {"type": "object", "properties": {
            "oldText": {"type": "string"}, "newText": {"type": "string"}}, "required": ["oldText", "newText"]}}},
        "required": ["path", "edits"]}, "s", annotations={"readOnlyHint": False, "destructiveHint": True})
    call = routed_call(edit, '{"path": "notes.txt", "edits": [{"oldText": "G", "newText": "Globex"}]}',
                       "In notes.txt, change Acme to Globex.")
    assert call.valid and call.arguments == {"path": "notes.txt", "edits": [{"oldText": "Acme", "newText": "Globex"}]}


def test_a_list_item_the_request_does_not_give_is_left_out_of_the_call():
    """Held-out set 21: "Create an entity for Dave, who is a designer." had also created an invented "John"."""
    create = Tool("create_entities", "Create multiple new entities in the knowledge graph", {"type": "object",
                  "properties": {"entities": {"type": "array", "items": {"type": "object", "properties": {
                      "name": {"type": "string"}, "entityType": {"type": "string"}}, "required": ["name", "entityType"]}}},
                  "required": ["entities"]}, "s")
    call = routed_call(create, '{"entities": [{"name": "Dave", "entityType": "designer"}, '
                               '{"name": "John", "entityType": "designer"}]}', "Create an entity for Dave, who is a designer.")
    assert call.valid and call.arguments == {"entities": [{"name": "Dave", "entityType": "designer"}]}


def test_a_relation_takes_the_words_the_request_writes_between_its_two_names():
    """Held-out set 22: "Add a relation: Bob manages Alice." had written the relation type "object"."""
    relate = Tool("create_relations", "Create multiple new relations between entities in the knowledge graph",
                  {"type": "object", "properties": {"relations": {"type": "array", "items": {"type": "object", "properties": {
                      "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}},
                      "required": ["from", "to", "relationType"]}}}, "required": ["relations"]}, "s")
    call = routed_call(relate, '{"relations": [{"from": "Bob", "to": "Alice", "relationType": "object"}]}',
                       "Add a relation: Bob manages Alice.")
    assert call.valid and call.arguments == {"relations": [{"from": "Bob", "to": "Alice", "relationType": "manages"}]}


def test_a_relation_the_request_does_not_state_beside_one_it_does_is_left_out():
    """Probe "Add a relation: Zoe knows Alice, in the knowledge graph." had also created Alice -friend-> Zoe."""
    relate = Tool("create_relations", "Create multiple new relations between entities in the knowledge graph",
                  {"type": "object", "properties": {"relations": {"type": "array", "items": {"type": "object", "properties": {
                      "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}},
                      "required": ["from", "to", "relationType"]}}}, "required": ["relations"]}, "s")
    call = routed_call(relate, '{"relations": [{"from": "Alice", "to": "Zoe", "relationType": "friend"}, '
                               '{"from": "Zoe", "to": "Alice", "relationType": "knows"}]}',
                       "Add a relation: Zoe knows Alice, in the knowledge graph.")
    assert call.valid and call.arguments == {"relations": [{"from": "Zoe", "to": "Alice", "relationType": "knows"}]}


NOTES = {"type": "object", "properties": {"observations": {"type": "array", "items": {"type": "object", "properties": {
    "entityName": {"type": "string"}, "contents": {"type": "array", "items": {"type": "string"}}},
    "required": ["entityName", "contents"]}}}, "required": ["observations"]}


@pytest.mark.parametrize("turn, written, recorded", [
    # held-out set 22: the model wrote no observation at all
    ("Add to Alice's entry that she plays the piano.", [], ["she plays the piano"]),
    # set 18: words the request never says
    # (the clause without its subject when that is the entity: how the graph keeps "works at Acme")
    ("Add the observation that Alice speaks French to Alice's entry.", ["Alice's name in French"], ["speaks French"]),
    # set 25 and held-out set 26: a part of the clause that leaves out more than its subject
    ("Add the fact that Alice speaks Spanish to Alice's entry.", ["Spanish"], ["speaks Spanish"]),
    # sessions 11-14: a quoted observation is meant whole
    ("Add the observation 'likes jazz' to the entity Alice.", ["jazz"], ["likes jazz"]),
    # the request's own words are kept, and a request stating no statement changes nothing
    ("Add the observation that Alice likes hiking.", ["likes hiking"], ["likes hiking"]),
    ("Add a note to Alice's entry.", ["a note"], ["a note"]),
])
def test_a_list_of_statements_records_what_the_request_states(turn, written, recorded):
    notes = Tool("add_observations", "Add new observations to existing entities in the knowledge graph", NOTES, "s")
    call = routed_call(notes, json.dumps({"observations": [{"entityName": "Alice", "contents": written}]}), turn)
    assert call.valid and call.arguments == {"observations": [{"entityName": "Alice", "contents": recorded}]}


def _shortlist_prior(tools, turn, first, second, arguments="{}"):
    """The name-choice prior the model got for a SHORTLIST of `first`, `second` (the gate's order) over `tools`."""
    reg = Registry()
    reg.set_source("s", tools)
    backend = ScriptedBackend(arguments=[arguments], choices=[second])
    ToolCaller(backend, reg).call(turn, decision(Action.SHORTLIST, first, second))
    return dict(zip(backend.calls[0][2], backend.priors[0]))


@pytest.mark.parametrize("ref", ["#/$defs/missing", "http://127.0.0.1:9/schema.json"])
def test_a_ref_that_does_not_resolve_within_the_schema_is_an_invalid_call_and_nothing_is_fetched(ref, monkeypatch):
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("a $ref was fetched"))
    tool = Tool("odd", "A tool with a broken $ref.", {"type": "object", "properties": {"x": {"$ref": ref}},
                                                       "required": ["x"]}, "s")
    reg = Registry()
    reg.set_source("s", [tool])
    arguments, error = ToolCaller(None, reg).validate("odd", '{"x": 1}', finished=True)
    assert arguments == {"x": 1} and "does not resolve" in error


def test_a_follow_up_is_offered_the_values_of_the_request_it_leans_on():
    reg = Registry()
    reg.set_source("s", [CONVERT])
    backend = ScriptedBackend(arguments=['{"source_timezone": "Europe/Paris", "time": "10:00", "target_timezone": "Australia/Sydney"}'])
    history = [Exchange("Convert 10:00 from Paris time to New York time.", "convert_time",
                        {"source_timezone": "Europe/Paris", "time": "10:00", "target_timezone": "America/New_York"}, "…")]
    call = ToolCaller(backend, reg).call("What about to Sydney?", decision(Action.ROUTE, "convert_time"), history)
    assert call.valid and call.arguments["time"] == "10:00"
    grammar = backend.calls[-1][2]
    assert grammar == arguments_gbnf(CONVERT.input_schema, "What about to Sydney?", history[0].request)
    # the earlier request's clock time, which the turn does not state, and its source zone: the turn moves the target
    assert all(value in grammar for value in ("Australia/Sydney", "Europe/Paris", "10:00")) and "America/New_York" not in grammar
    assert "10:00" not in arguments_gbnf(CONVERT.input_schema, "What about to Sydney?")


def test_an_optional_value_that_only_repeats_the_tool_name_is_left_out():
    """git_create_branch(branch_name="feature-login", base_branch="git_create_branch") was refused by the git server:
    the request states neither the name as a value nor a base branch, though it says "create" and "branch"."""
    create = Tool("git_create_branch", "Creates a new branch from an optional base branch", {"type": "object", "properties": {
        "repo_path": {"type": "string"}, "branch_name": {"type": "string"}, "base_branch": {"type": "string"}},
        "required": ["repo_path", "branch_name"]}, "s")
    reg = Registry()
    reg.set_source("s", [create])
    wrote = '{"repo_path": "/srv/repo", "branch_name": "feature-login", "base_branch": "git_create_branch"}'
    caller = ToolCaller(ScriptedBackend(arguments=[wrote]), reg)
    call = caller.call("Create a new branch named feature-login in /srv/repo.", decision(Action.ROUTE, "git_create_branch"))
    assert call.valid and call.arguments == {"repo_path": "/srv/repo", "branch_name": "feature-login"}
    said = ToolCaller(ScriptedBackend(arguments=[wrote]), reg).call(
        "Create a branch feature-login in /srv/repo from the branch git_create_branch.", decision(Action.ROUTE, "git_create_branch"))
    assert said.arguments["base_branch"] == "git_create_branch"  # written by the user: kept


def test_a_stated_date_weighs_down_no_tool_that_lacks_a_date_parameter():
    """A request often states dates its tool does not take; a scheduling distractor that takes one must not win by it
    (T's "check in on 05/10/2023 … find available houses" had gone from Hotels_2_SearchHouse to Homes_2_ScheduleVisit)."""
    search = Tool("search_house", "Search for available houses at a location.", {"type": "object", "properties": {
        "where_to": {"type": "string"}, "number_of_adults": {"type": "integer"}}, "required": ["where_to"]}, "s")
    visit = Tool("schedule_visit", "Schedule a visit to a property on a given date.", {"type": "object", "properties": {
        "property_name": {"type": "string"}, "visit_date": {"type": "string", "format": "date"}},
        "required": ["property_name", "visit_date"]}, "s")
    turn = "Book a house in New York for 4 adults, checking in on 05/10/2023. Find available options."
    assert _shortlist_prior([search, visit], turn, "search_house", "schedule_visit")["search_house"] == pytest.approx(0.9)


def test_a_sql_statement_written_out_weighs_down_tools_that_do_not_run_its_kind():
    """"Run this SQL: DELETE FROM notes WHERE id = 3." had called the knowledge graph's delete_relations."""
    delete = Tool("delete_relations", "Delete multiple relations from the knowledge graph", {"type": "object", "properties": {
        "relations": {"type": "array", "items": {"type": "object"}}}, "required": ["relations"]}, "s")
    write = Tool("write_query", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database", {"type": "object",
                 "properties": {"query": {"type": "string", "description": "SQL query to execute"}}, "required": ["query"]}, "s")
    read = Tool("read_query", "Execute a SELECT query on the SQLite database", {"type": "object",
                "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}}, "required": ["query"]}, "s")
    prior = _shortlist_prior([delete, write], "Run this SQL: DELETE FROM notes WHERE id = 3.", "delete_relations", "write_query")
    assert prior["delete_relations"] == pytest.approx(0.09 / 0.19)
    prior = _shortlist_prior([read, write], "Run this SQL: DELETE FROM notes WHERE id = 3.", "read_query", "write_query")
    assert prior["read_query"] == pytest.approx(0.09 / 0.19)
    prior = _shortlist_prior([delete, write], "Remove the link between Alice and Acme.", "delete_relations", "write_query")
    assert prior["delete_relations"] == pytest.approx(0.9)  # no SQL written: the gate's prior as it is
    # ("Delete the relation between …" says delete_relations' name, which puts write_query behind it: `spells_name`)
    prior = _shortlist_prior([delete, write], "Delete the relation between Alice and Acme.", "delete_relations", "write_query")
    assert prior["delete_relations"] == pytest.approx(0.9 / 0.91)


def test_the_two_ends_of_a_move_between_files_take_the_path_the_request_writes():
    """move_file(source, destination) names no parameter a path; "Move notes.txt into the backups folder." had
    weighed it down as taking no path, and the model called write_file, which overwrote the file."""
    move = Tool("move_file", "Move or rename files and directories.", {"type": "object", "properties": {
        "source": {"type": "string"}, "destination": {"type": "string"}}, "required": ["source", "destination"]}, "s")
    read = Tool("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                              "required": ["path"]}, "s")
    prior = _shortlist_prior([move, read], "Move notes.txt into the backups folder.", "move_file", "read_file",
                             '{"path": "notes.txt"}')
    assert prior["move_file"] == pytest.approx(0.9)  # the gate's prior as it is: both take the path


def test_an_optional_value_that_is_only_a_piece_of_a_required_one_is_dropped():
    """"Create a new branch called feature-x." had filled base_branch with "x"; the server refused the call."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "properties": {"repo_path": {"type": "string"}, "branch_name": {"type": "string"},
                                               "base_branch": {"type": "string"}}, "required": ["repo_path", "branch_name"]}
    out = normalise_arguments({"repo_path": "/r", "branch_name": "feature-x", "base_branch": "x"}, schema,
                              "Create a new branch called feature-x.")
    assert out == {"repo_path": "/r", "branch_name": "feature-x"}
    out = normalise_arguments({"repo_path": "/r", "branch_name": "feature-x", "base_branch": "main"}, schema,
                              "Create a new branch called feature-x from main.")
    assert out["base_branch"] == "main"


_INFO = Tool("get_file_info", "Retrieve detailed metadata about a file: size, creation time, last modified time.", _FILE, "s")
_ADD = Tool("add_observations", "Add new observations to existing entities in the knowledge graph", _ENTITY, "s")


@pytest.mark.parametrize("turn, weighted", [("How big is notes.txt?", True), ("When was notes.txt created?", True),
                                            ("Show me the file info for notes.txt.", True), ("Read notes.txt.", False)])
def test_a_tool_that_does_not_name_the_file_property_asked_for_is_weighted_down(turn, weighted):
    """"How big is notes.txt?" had read the file, listed above get_file_info (held-out set 32); the reason counts twice
    (at one, "What is the modification date of notes.txt?" still read it, set 82)."""
    prior = _shortlist_prior([_READ, _INFO], turn, "read_file", "get_file_info")
    assert prior["read_file"] == pytest.approx(0.009 / 0.109 if weighted else 0.9)


@pytest.mark.parametrize("turn, weighted", [("Add a person named Dave to the knowledge graph.", True),
                                            ("Add Marie, a scientist, to my knowledge graph.", True),
                                            ("Add that Alice likes tennis to the knowledge graph.", False)])
def test_a_tool_for_existing_things_is_weighted_down_when_the_request_introduces_a_new_one(turn, weighted):
    """"Add a person named Dave …" had called add_observations ("… to existing entities"), listed above create_entities."""
    prior = _shortlist_prior([_ADD, _CREATE], turn, "add_observations", "create_entities")
    assert prior["add_observations"] == pytest.approx(0.09 / 0.19 if weighted else 0.9)


def test_each_reason_a_tool_does_not_fit_weighs_it_down_once_more():
    """A reader that takes nothing, for a request that writes and names what to write, has four reasons against it (it
    takes nothing, which counts twice, NAMED_FOR_EMPTY; its name reads; it adds nothing to the graph); a reader that
    takes a query has two; the creator none: 0.01 and 0.0001 of their shares."""
    read_graph = Tool("read_graph", "Read the entire knowledge graph", {"type": "object", "properties": {}}, "s")
    search = Tool("search_nodes", "Search for nodes in the knowledge graph", {"type": "object", "properties": {
        "query": {"type": "string"}}, "required": ["query"]}, "s")
    reg = Registry()
    reg.set_source("s", [read_graph, search, _CREATE])
    backend = ScriptedBackend(arguments=["{}"], choices=["create_entities"])
    turn = "Note in the knowledge graph that Bob likes tennis."
    ToolCaller(backend, reg).call(turn, decision(Action.SHORTLIST, "read_graph", "search_nodes", "create_entities"))
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))
    ranked = dict(zip(("read_graph", "search_nodes", "create_entities"), rank_prior(0.9, 3)))
    share = {k: prior[k] / prior["create_entities"] / (ranked[k] / ranked["create_entities"]) for k in ranked}
    assert share["search_nodes"] == pytest.approx(0.01) and share["read_graph"] == pytest.approx(0.0001)


@pytest.mark.parametrize("turn, reasons", [("Note in my knowledge graph that Acme is based in Denver.", 2),
                                           ("Search my knowledge graph for Acme.", 0)])
def test_a_request_to_record_something_weighs_down_a_tool_its_server_marks_read_only(turn, reasons):
    """"Note in my knowledge graph that Acme is based in Denver." had called search_nodes (held-out set 32): its name
    reads (`contrary`), its server marks it read-only and it adds nothing for a fact to keep, three reasons against it,
    while add_observations changes the graph. Without annotations the name's and the fact's reasons are left."""
    search = Tool("search_nodes", "Search for nodes in the knowledge graph", {"type": "object", "properties": {
        "query": {"type": "string"}}, "required": ["query"]}, "s", annotations={"readOnlyHint": True})
    add = Tool("add_observations", "Add new observations to entities in the knowledge graph", _ENTITY, "s",
               annotations={"readOnlyHint": False})
    prior = _shortlist_prior([search, add], turn, "search_nodes", "add_observations")
    plain = _shortlist_prior([Tool(t.name, t.description, t.input_schema, "s") for t in (search, add)], turn,
                             "search_nodes", "add_observations")
    if reasons:
        assert prior["search_nodes"] == pytest.approx(0.0009 / 0.1009)
        assert plain["search_nodes"] == pytest.approx(0.009 / 0.109)
    else:  # a search asked for: it is add_observations that does not fit (it adds, and it changes the graph)
        assert prior["search_nodes"] > 0.9 and plain["search_nodes"] > 0.9


@pytest.mark.parametrize("turn, weighted", [("Show the directory tree of my workspace.", True),
                                            ("Show me what's in my workspace.", False)])
def test_a_tool_the_request_does_not_name_goes_behind_one_it_names(turn, weighted):
    """"Show the directory tree of my workspace." had called list_directory, listed above directory_tree (set 33)."""
    listing = Tool("list_directory", "Get a detailed listing of all files and directories in a specified path", _FILE, "s")
    tree = Tool("directory_tree", "Get a recursive tree view of files and directories as a JSON structure", _FILE, "s")
    prior = _shortlist_prior([listing, tree], turn, "list_directory", "directory_tree")
    assert prior["list_directory"] == pytest.approx(0.09 / 0.19 if weighted else 0.9)


@pytest.mark.parametrize("git_names, weighted", [(("git_status", "git_log", "git_create_branch"), True),
                                                  (("git_status", "log", "git_create_branch"), False)])
def test_a_tool_the_request_names_without_its_servers_prefix_goes_first(git_names, weighted):
    """"Create a branch called feature-search in the repository." had called create_entities, listed first (set 82):
    the request says `git_create_branch` without the `git` every tool of its server starts with."""
    reg = Registry()
    reg.set_source("git", [Tool(n, "A git tool", _REPO, "git") for n in git_names])
    reg.set_source("memory", [_CREATE])
    backend = ScriptedBackend(arguments=["{}"], choices=["git_create_branch"])
    ToolCaller(backend, reg).call("Create a branch called feature-search in the repository.",
                                  decision(Action.SHORTLIST, "create_entities", "git_create_branch"))
    prior = dict(zip(backend.calls[0][2], backend.priors[0]))
    assert prior["create_entities"] == pytest.approx(0.09 / 0.19 if weighted else 0.9)


def test_a_stated_replacement_puts_a_tool_with_an_old_and_new_text_before_one_without():
    """"Replace 'Acme' with 'Globex' in notes.txt." had called write_file(content="Acme"), overwriting the file (set 34)."""
    edit = Tool("edit_file", "Make line-based edits to a text file", {"type": "object", "properties": {
        "path": {"type": "string"}, "edits": {"type": "array", "items": {"type": "object", "properties": {
            "oldText": {"type": "string"}, "newText": {"type": "string"}}}}}, "required": ["path", "edits"]}, "s")
    prior = _shortlist_prior([_WRITE, edit], "Replace 'Acme' with 'Globex' in notes.txt.", "write_file", "edit_file")
    assert prior["write_file"] == pytest.approx(0.09 / 0.19)
    assert _shortlist_prior([_WRITE, edit], "Write 'Acme' into notes.txt.", "write_file", "edit_file")["write_file"] \
        == pytest.approx(0.9)


_TRIPLES = {"type": "object", "properties": {"relations": {"type": "array", "items": {"type": "object", "properties": {
    "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}},
    "required": ["from", "to", "relationType"]}}}, "required": ["relations"]}
_RELATE = Tool("create_relations", "Create multiple new relations between entities in the knowledge graph", _TRIPLES, "s")


@pytest.mark.parametrize("turn, weighted", [("Remember that Carol is a software engineer.", True),
                                            ("Note in the knowledge graph that Bob likes tennis.", True),
                                            ("Record that Alice knows Bob.", False)])
def test_a_tool_that_relates_two_named_things_goes_behind_when_the_request_names_fewer(turn, weighted):
    """"Remember that Carol is a software engineer." had created a relation from Carol to a name from nowhere."""
    prior = _shortlist_prior([_RELATE, _CREATE], turn, "create_relations", "create_entities")
    assert prior["create_relations"] == pytest.approx(0.09 / 0.19 if weighted else 0.9)


@pytest.mark.parametrize("turn, weighted", [("Commit the staged changes with the message 'Fix typo'.", True),
                                            ("Show me the staged changes.", False)])
def test_a_tool_with_the_parameter_a_request_quotes_a_value_for_goes_first(turn, weighted):
    """"Commit the staged changes with the message 'Fix typo'." had called git_diff_staged, listed above git_commit."""
    commit = Tool("git_commit", "Records changes to the repository", {"type": "object", "properties": {
        "message": {"type": "string"}}, "required": ["message"]}, "s")
    staged = Tool("git_diff_staged", "Shows changes that are staged for commit", {"type": "object", "properties": {
        "context_lines": {"type": "integer"}}}, "s")
    prior = _shortlist_prior([staged, commit], turn, "git_diff_staged", "git_commit", '{"message": "Fix typo"}')
    assert prior["git_diff_staged"] == pytest.approx(0.09 / 0.19 if weighted else 0.9)


@pytest.mark.parametrize("turn, weighted", [("Show me the commit history.", True), ("What was in the latest commit?", False),
                                            ("Show commit 3f2a9c1.", False)])
def test_a_tool_that_needs_a_commit_the_request_does_not_state_is_weighted_down(turn, weighted):
    """"Show me the commit history." had called git_show, which needs a revision, and looped inventing one."""
    show = Tool("git_show", "Shows the contents of a commit", {"type": "object", "properties": {
        "revision": {"type": "string"}}, "required": ["revision"]}, "s")
    log_ = Tool("git_log", "Shows the commit logs", {"type": "object", "properties": {
        "max_count": {"type": "integer"}}}, "s")
    prior = _shortlist_prior([show, log_], turn, "git_show", "git_log")
    if weighted:
        assert prior["git_show"] == pytest.approx(0.09 / 0.19)
    else:  # a commit stated: git_show takes it, and git_log, with no room for it, goes behind
        assert prior["git_show"] >= 0.9


def test_a_nested_name_field_takes_a_name_the_request_writes():
    """"Record that Alice works at Acme as a relation." had written `to: "Alex"`: the ends take the request's names;
    a request that writes none leaves them free."""
    from nexus.llm.grammars import grammar_schema

    items = grammar_schema(_TRIPLES, "Record that Alice works at Acme as a relation.")["properties"]["relations"]["items"]
    assert items["properties"]["from"]["enum"] == ["Alice", "Acme"] == items["properties"]["to"]["enum"]
    assert "enum" not in items["properties"]["relationType"]
    free = grammar_schema(_TRIPLES, "store a relation between my two cats")["properties"]["relations"]["items"]
    assert "enum" not in free["properties"]["from"]


@pytest.mark.parametrize("turn, weighted", [("What changed in the last commit?", True), ("Show commit 3f2a9c1.", True),
                                            ("What have I changed since my last commit?", False)])
def test_a_tool_that_takes_no_commit_goes_behind_one_that_does_when_the_request_states_one(turn, weighted):
    """"What changed in the last commit?" had called git_diff_staged, listed above git_show."""
    staged = Tool("git_diff_staged", "Shows changes that are staged for commit", {"type": "object", "properties": {
        "context_lines": {"type": "integer"}}}, "s")
    show = Tool("git_show", "Shows the contents of a commit", {"type": "object", "properties": {
        "revision": {"type": "string"}}, "required": ["revision"]}, "s")
    prior = _shortlist_prior([staged, show], turn, "git_diff_staged", "git_show", '{"revision": "HEAD"}')
    if weighted:
        assert prior["git_diff_staged"] == pytest.approx(0.09 / 0.19)
    else:  # no commit stated: git_show would invent one, so it is git_show that goes behind
        assert prior["git_diff_staged"] > 0.9


def _tool(name, description, properties=None, required=()):
    return Tool(name, description, {"type": "object", "properties": properties or {}, "required": list(required)}, "s")


def test_a_tool_named_with_the_un_form_of_what_the_request_says_goes_far_behind():
    """"Show the changes I've already staged." had called git_diff_unstaged three times against the gate's order."""
    staged = _tool("git_diff_staged", "Shows changes that are staged for commit")
    unstaged = _tool("git_diff_unstaged", "Shows changes in the working directory that are not yet staged")
    for turn in ("Show the changes I've already staged.", "What have I staged?"):
        prior = _shortlist_prior([unstaged, staged], turn, "git_diff_unstaged", "git_diff_staged")
        assert prior["git_diff_unstaged"] < 0.01
    # with a "not" in the request, the word is not said plainly: the un-form is not held back
    prior = _shortlist_prior([unstaged, staged], "What haven't I staged yet?", "git_diff_unstaged", "git_diff_staged")
    assert prior["git_diff_unstaged"] > prior["git_diff_staged"]


def test_a_question_about_a_folder_puts_a_folder_listing_first():
    """"List the contents of the repo folder." had called git_branch."""
    branch = _tool("git_branch", "List Git branches", {"repo_path": {"type": "string"}}, ["repo_path"])
    listing = _tool("list_directory", "Get a detailed listing of all files and directories in a specified path",
                    {"path": {"type": "string"}}, ["path"])
    prior = _shortlist_prior([branch, listing], "List the contents of the repo folder.", "git_branch", "list_directory",
                             '{"path": "repo"}')
    assert prior["list_directory"] > prior["git_branch"]  # the gate's 0.9 / 0.1, the first weighted by 0.1


def test_a_fact_to_forget_goes_to_a_tool_that_removes_statements_not_the_thing():
    """"Forget that Alice likes tennis." must not delete Alice."""
    entities = _tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph",
                     {"entityNames": {"type": "array", "items": {"type": "string"}}}, ["entityNames"])
    observations = _tool("delete_observations", "Delete specific observations from entities in the knowledge graph",
                         {"deletions": {"type": "array", "items": {"type": "object", "properties": {
                             "entityName": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}}}}}},
                         ["deletions"])
    prior = _shortlist_prior([entities, observations], "Forget that Alice likes tennis.", "delete_entities",
                             "delete_observations", '{"deletions": [{"entityName": "Alice", "observations": ["likes tennis"]}]}')
    assert prior["delete_observations"] > prior["delete_entities"]
    prior = _shortlist_prior([entities, observations], "Forget everything about Bob.", "delete_entities",
                             "delete_observations", '{"deletions": []}')
    assert prior["delete_entities"] > prior["delete_observations"]


def test_a_question_about_what_is_kept_puts_a_memory_reader_first():
    """"What do I have stored about Bob?" had called get_file_info with a path from the prompt's examples."""
    info = _tool("get_file_info", "Retrieve detailed metadata about a file or directory", {"path": {"type": "string"}}, ["path"])
    nodes = _tool("open_nodes", "Open specific nodes in the knowledge graph by their names",
                  {"names": {"type": "array", "items": {"type": "string"}}}, ["names"])
    prior = _shortlist_prior([info, nodes], "What do I have stored about Bob?", "get_file_info", "open_nodes", '{"names": ["Bob"]}')
    assert prior["open_nodes"] > prior["get_file_info"]


def test_a_routed_statement_reaches_the_server_with_the_tables_its_database_holds():
    """The caller hands `normalise_arguments` the tool's tables (`Tool.tables`): `notes_table` is sent as `notes`."""
    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
              "required": ["query"]}
    reg = Registry()
    reg.set_source("db", [Tool("read_query", "Execute a SELECT query on the SQLite database", schema, "db",
                               tables={"notes": {"title": "TEXT"}})])
    backend = ScriptedBackend(arguments=['{"query": "SELECT * FROM notes_table"}'])
    call = ToolCaller(backend, reg).call("Which titles do the notes in the notes table have?",
                                         decision(Action.ROUTE, "read_query"))
    assert call.valid and call.arguments == {"query": "SELECT * FROM notes"}
