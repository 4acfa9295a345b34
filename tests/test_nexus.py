"""The facade on deterministic parts: one embedding per turn, hashes once per change, settings everywhere,
request tool lists cached by hash, odd names, per-request overrides, validated calls."""

from __future__ import annotations

import anyio
import pytest

from nexus.config import Settings
from nexus.errors import ArgumentsError, RequestError, UnknownToolError
from nexus.gate.decision import Action
from nexus.llm.scripted import ScriptedBackend
from nexus.nexus import Nexus, Overrides
from nexus.registry import Registry, Tool
from nexus.router import ScoreGate
from nexus.slb import HashEmbedder

OBJ = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
TOOLS = [
    Tool("get_time", "Current time in a timezone", OBJ, "time"),
    Tool("git_log", "Show the commit log of a git repository", {"type": "object"}, "git"),
    Tool("calculate", "Evaluate an arithmetic expression", {"type": "object"}, "calc"),
    Tool("send_email", "Send an email message to a recipient", {"type": "object"}, "mail"),
]


class CountingEmbedder(HashEmbedder):
    def __init__(self):
        super().__init__()
        self.batches: list[list[str]] = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return super().embed(texts)


def openai_tools(tools):
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)}}
            for t in tools]


def make(settings=None, backend=None, **kw):
    registry = Registry()
    for tool in TOOLS:
        registry.set_source(tool.origin, [tool])
    embedder = CountingEmbedder()
    settings = settings or Settings(gate={"model": "/nonexistent"})
    return Nexus.from_settings(settings, registry=registry, embedder=embedder, backend=backend, **kw), embedder


def test_one_embedding_per_turn_even_for_a_follow_up_and_the_fallback_order():
    nx, embedder = make(gate_factory=lambda slb, reg: ScoreGate(slb, route_margin=9.0, no_tool_below=-9.0))
    nx.sync()
    embedder.batches.clear()
    messages = [{"role": "user", "content": "what is the current time in Tokyo"},
                {"role": "assistant", "content": "10:00"},
                {"role": "user", "content": "and in London?"}]
    routing = nx.route(messages)
    assert routing.decision.action is Action.SHORTLIST
    assert len(embedder.batches) == 1  # the turn and its follow-up context, in one batch
    assert "and in London?" in embedder.batches[0] and any("Tokyo" in t for t in embedder.batches[0])
    nx.route(messages, overrides=Overrides(disable=True))  # FALLBACK ranks every tool with the remembered vector
    assert len(embedder.batches) == 1


def test_registry_hash_is_computed_once_per_change(monkeypatch):
    import nexus.registry.registry as registry_module

    nx, _ = make()
    nx.sync()
    import hashlib
    import types

    calls = []
    counting = types.SimpleNamespace(sha256=lambda *a: calls.append(1) or hashlib.sha256(*a))
    monkeypatch.setattr(registry_module, "hashlib", counting)  # the registry's own hashing only
    for _ in range(5):
        nx.route("what is the current time in Tokyo")
    assert calls == []
    nx.registry.set_source("extra", [Tool("ping", "Ping a host", {"type": "object"}, "extra")])
    nx.route("ping the host example.org")
    nx.route("ping the host example.org")
    assert len(calls) == 1 and "ping" in nx.sync().slb.keys


def test_gate_settings_reach_the_router_and_the_fallback_gate():
    nx, _ = make(Settings(gate={"model": "/nonexistent", "k": 2, "shortlist_k": 2}))
    view = nx.sync()
    assert view.router.k == 2 and view.gate.k == 2 and view.gate.shortlist_k == 2
    assert len(nx.route("show something").decision.candidates) <= 2


def test_request_tools_are_indexed_once_per_list_and_shared_rows_are_reused():
    nx, embedder = make()
    tools = openai_tools(TOOLS)
    nx.route("what is the current time in Tokyo", tools=tools)
    rows = sum(len(b) for b in embedder.batches if len(b) == len(TOOLS))
    assert rows == len(TOOLS)
    embedder.batches.clear()
    nx.route("what is the current time in Paris", tools=tools)
    assert all(len(b) <= 2 for b in embedder.batches)  # only the turn: the list's index is cached
    embedder.batches.clear()
    more = tools + openai_tools([Tool("ping", "Ping a host", {"type": "object"})])
    nx.route("ping example.org", tools=more)
    tool_batches = [b for b in embedder.batches if any(t.startswith("ping") or "Ping a host" in t for t in b)]
    assert tool_batches and all(len(b) == 1 for b in tool_batches)  # only the new tool was embedded


def test_odd_tool_names_are_accepted_and_mapped_both_ways(caplog):
    nx, _ = make()
    odd = openai_tools([Tool("get weather", "Current weather for a city", {"type": "object"}),
                        Tool("fs/read", "Read a file from disk", {"type": "object"}),
                        Tool("météo", "Weather forecast for tomorrow in a city", {"type": "object"})])
    routing = nx.route("current weather for a city", tools=odd, overrides=Overrides(disable=True))
    assert sorted(routing.names(routing.kept)) == ["fs/read", "get weather", "météo"]
    assert all(k.replace("_", "").replace("-", "").isalnum() for k in routing.kept)  # the aliases are safe
    assert "outside the MCP character set" in caplog.text
    forced = nx.route("anything", tools=odd, overrides=Overrides(force_tool="get weather"))
    assert forced.names(forced.kept) == ["get weather"]


def test_overrides_and_their_reasons():
    nx, _ = make(gate_factory=lambda slb, reg: ScoreGate(slb, route_margin=9.0, no_tool_below=-9.0))
    forced = nx.route("hello", overrides=Overrides(force_tool="calculate"))
    assert forced.decision.action is Action.ROUTE and forced.kept == ["calculate"] and "forced" in forced.reason
    everything = nx.route("hello", overrides=Overrides(disable=True))
    assert everything.decision.action is Action.FALLBACK and sorted(everything.kept) == sorted(t.name for t in TOOLS)
    assert everything.dropped == []
    cut = nx.route("show the commit log", overrides=Overrides(top_k=1))
    assert cut.kept == [cut.decision.candidates[0].key] and len(cut.dropped) == len(TOOLS) - 1 and "top_k=1" in cut.reason
    explained = cut.explain()
    assert explained["decision"] == "shortlist" and len(explained["dropped"]) == len(TOOLS) - 1
    with pytest.raises(UnknownToolError, match="not among the tools"):
        nx.route("hello", overrides=Overrides(force_tool="rm_rf"))


def test_bad_conversations_and_tool_lists_are_request_errors():
    nx, _ = make()
    for messages in ([], [{"content": "no role"}], [{"role": "system", "content": "only a system prompt"}]):
        with pytest.raises(RequestError):
            nx.route(messages)
    with pytest.raises(RequestError, match="inputSchema"):
        nx.route("hi", tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}])


def test_a_text_part_without_a_string_text_adds_nothing_to_the_turn():
    from nexus.conversation import message_text

    parts = [{"type": "text", "text": None}, {"type": "text", "text": "time in Tokyo"}, {"type": "image_url"}]
    assert message_text(parts) == "time in Tokyo" and message_text([{"type": "text", "text": None}]) == ""


def test_respond_calls_with_validated_arguments_and_answers_after_tool_results():
    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], answers=["It is 10:00 in Tokyo."])
    nx, _ = make(backend=backend, gate_factory=lambda slb, reg: ScoreGate(slb, route_margin=0.0))
    routed = nx.respond("what is the current time in a timezone, Tokyo")
    assert routed.call.tool == "get_time" and routed.call.arguments == {"timezone": "Asia/Tokyo"} and routed.call.valid
    after = nx.respond([{"role": "user", "content": "time in Tokyo?"},
                        {"role": "assistant", "tool_calls": [{"id": "1", "type": "function", "function": {
                            "name": "get_time", "arguments": '{"timezone": "Asia/Tokyo"}'}}]},
                        {"role": "tool", "tool_call_id": "1", "content": "10:00"}])
    assert after.call.tool is None and after.call.answer == "It is 10:00 in Tokyo."


def test_call_never_forwards_unknown_tools_or_invalid_arguments():
    nx, _ = make()
    with pytest.raises(UnknownToolError):
        anyio.run(nx.call, "rm_rf", {})
    with pytest.raises(ArgumentsError, match="timezone"):
        anyio.run(nx.call, "get_time", {})
    with pytest.raises(ArgumentsError, match="not of type"):
        anyio.run(nx.call, "get_time", {"timezone": 5})
