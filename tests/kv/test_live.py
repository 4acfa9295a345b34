"""The router on the packaged Gemma 3 270M with compiled KV blocks on and off: the same calls, fewer tokens
computed once the blocks exist, and the audit's fidelity record."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pytest

from nexus.config import KVSettings, Settings
from nexus.gate.decision import Action, Decision
from nexus.kv import KVBlocks
from nexus.llm.base import Prompt
from nexus.registry import Registry, Tool
from nexus.router import Router
from nexus.slb import HashEmbedder, SemanticLookasideBuffer
from nexus.slb.index import Hit

TOOLS = [
    Tool("get_time", "Current time in a timezone", {"type": "object", "properties": {
        "timezone": {"type": "string", "description": "IANA timezone, e.g. Asia/Tokyo"}}, "required": ["timezone"]}, "s"),
    Tool("get_weather", "Current weather for a city", {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}, "s"),
    Tool("send_message", "Send a chat message to a person", {"type": "object", "properties": {
        "to": {"type": "string"}, "text": {"type": "string"}}, "required": ["to", "text"]}, "s"),
]
TURNS = ["what time is it in Tokyo right now?", "weather in Oslo in celsius", "tell Ann that I am late"]


GOLD = dict(zip(TURNS, ("get_time", "get_weather", "send_message")))


class FixedGate:
    """ROUTE to the turn's own tool, or SHORTLIST all three with it first: calls the model is sure of, so that
    a near-tie cannot flip on numerical noise alone."""

    def __init__(self, action: Action):
        self.action = action

    def decide(self, turn: str, history: Sequence[str] = (), hits: Sequence[Hit] | None = None) -> Decision:
        ranked = sorted(hits or (), key=lambda h: h.key != GOLD[turn])
        return Decision(self.action, tuple(ranked)[: 1 if self.action is Action.ROUTE else 3], p_top1=0.5, p_no_tool=0.0)


@pytest.fixture(scope="module")
def backend(gguf_path):
    from nexus.llm.llamacpp import LlamaCppBackend

    llm = LlamaCppBackend(gguf_path, n_ctx=2048, n_threads=1)
    yield llm
    llm.close()


@pytest.mark.parametrize("action", [Action.ROUTE, pytest.param(Action.SHORTLIST, marks=pytest.mark.slow)])
def test_router_makes_the_same_calls_with_blocks_on_and_off(backend, tmp_path, action):
    registry = Registry()
    registry.set_source("s", TOOLS)
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    calls, audited = {}, None
    for mode in ("off", "on", "on"):  # the second "on" pass, without audit, loads every block from disk
        settings = Settings(cache_dir=tmp_path, kv=KVSettings(blocks=mode, audit=mode == "on" and audited is None))
        router = Router(registry, slb, FixedGate(action), backend, settings=settings)
        assert isinstance(router.blocks, KVBlocks) == (mode == "on")
        audited = audited or router.blocks
        backend.reset()
        router.warm()
        routed = [router.route(turn) for turn in TURNS]
        calls.setdefault(mode, []).append([(r.call.tool, r.call.arguments) for r in routed])
        calls.setdefault(mode + "_computed", []).append(sum(r.call.prefilled_tokens for r in routed))
    assert calls["on"][0] == calls["off"][0] == calls["on"][1]
    assert calls["on_computed"][1] < calls["off_computed"][0]  # tool lines came from blocks, not prefill
    assert backend.blocks.compiler.compiled == 0  # nothing compiled in the last pass
    audits = audited.audits
    assert audits and all(a["top1"] for a in audits)
    # blocks at their anchor hold the very bits of the plain prefill (it decodes in the units they were compiled in);
    # a shortlist's later lines, off their anchor, are re-prefilled by the default policy with what follows them
    assert all(a["drift_max"] == 0 and a["kl"] == 0.0 for a in audits)
    backend.blocks = None


def test_a_prompt_never_fails_because_of_the_blocks_sequences(gguf_path, tmp_path, caplog):
    """Regression (a dev run once stopped with "KV cache full" on a FALLBACK with blocks on): KV cells the blocks'
    own sequences hold are freed and the prompt prefilled, with the reason logged."""
    import logging

    from nexus.llm.base import Prompt
    from nexus.llm.llamacpp import LlamaCppBackend

    from nexus.kv import BlockStore, RepairPolicy, SchemaBlockCompiler

    with LlamaCppBackend(gguf_path, n_ctx=256, n_threads=1, n_seq_max=4) as llm:  # 256 + 1024 cells
        # attach_blocks' parts, with a stand-in model hash (nothing is compiled here)
        blocks = llm.blocks = KVBlocks(llm.context, SchemaBlockCompiler(llm.context, BlockStore(tmp_path), "m"), RepairPolicy())
        filler = llm.model.tokenize(" lorem ipsum" * 800)[:1100]
        assert len(filler) == 1100
        llm.context.decode(filler, blocks.compiler.prefix_seq, 0)  # the blocks' sequences hold 1100 cells
        prompt = Prompt((" one two three" * 70,))
        with caplog.at_level(logging.WARNING):
            computed = llm.prefill(prompt)
        assert computed == llm.count_tokens(prompt) > 1280 - 1100
        assert "freeing the blocks' sequences" in caplog.text
        assert llm.context.tokens(blocks.compiler.prefix_seq) == [] and llm.context.tokens(0) == llm.tokens(prompt)
        llm.blocks = None



ROOM = Tool("reserve_room", "Reserve a room of a given kind for some nights at a named hotel, from a given day.", {
    "type": "object", "properties": {
        "hotel": {"type": "string", "description": "The name of the hotel."},
        "city": {"type": "string", "description": "The city the hotel is in."},
        "kind": {"type": "string", "description": "The kind of room to reserve."},
        "first_day": {"type": "string", "description": "The day the stay starts."},
        "nights": {"type": "integer", "description": "How many nights the stay lasts."}},
    "required": ["hotel", "city", "kind", "first_day", "nights"]}, "s")


def test_blocks_compiled_ahead_while_the_context_holds_a_prompt_are_exact(backend, tmp_path):
    """Regression (`nexus bench latency` at revision 66baefc: nexus_kv wrote other arguments than nexus on 2 of 30
    turns per size). llama.cpp's result depends on the KV cells in use around a token, not only on the tokens: a
    block compiled ahead (`compile_registry`) while the live sequence still held the last turn's prompt was
    computed beside cells the live path never has, and moved the next logits by up to ~1. The compiler now parks
    what the live sequence holds past the header and compiles in the cells the live path uses."""
    registry = Registry()
    registry.set_source("s", [*TOOLS, ROOM])
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    turn = "Book a single room for two nights at the Grand Plaza in Boston, starting from 10th December 2022."
    logits = {}
    for mode in ("off", "on"):
        router = Router(registry, slb, FixedGate(Action.ROUTE), backend,
                        settings=Settings(cache_dir=tmp_path, kv=KVSettings(blocks=mode)))
        caller = router.caller
        prompt = caller.prompts.arguments_prompt(
            caller.prompts.call_prompt(turn, caller.tool_lines([ROOM.name], "schema"), blocks=True), ROOM.name)
        backend.reset()
        router.warm()
        if mode == "on":  # the live sequence still holds the last turn (here: this very prompt and its call)
            held = prompt.extend(' {"hotel": "Grand Plaza", "city": "Boston, MA", "kind": "single", '
                                 '"first_day": "10/12/2022", "nights": 2}\n')
            backend.prefill(replace(held, blocks=()))  # prefilled plainly: no block compiled yet
            router.blocks.compiler.compile_registry(registry, backend.model.tokenize,
                                                    backend.tokens(caller.prompts.tools_prefix(())), ["schema"])
            assert backend.context.tokens(backend.seq) == backend.tokens(held)  # the live prompt is kept
            backend.reset()  # as `nexus bench latency` does before its turns
            router.warm()
        backend.prefill(prompt)
        logits[mode] = np.array(backend.context.logits(), copy=True)
        if mode == "on":
            assert router.blocks.compiler.compiled == len(registry) and router.blocks.injections == 1
        backend.blocks = None
    assert np.array_equal(logits["off"], logits["on"])


def test_blocks_are_on_by_default_where_the_backend_can_take_them(backend, tmp_path, monkeypatch):
    monkeypatch.delenv("NEXUS_KV_BLOCKS", raising=False)
    registry = Registry()
    registry.set_source("s", TOOLS)
    slb = SemanticLookasideBuffer(HashEmbedder())
    router = Router(registry, slb, FixedGate(Action.ROUTE), backend, settings=Settings(cache_dir=tmp_path))
    assert isinstance(router.blocks, KVBlocks) and backend.blocks is router.blocks
    router = Router(registry, slb, FixedGate(Action.ROUTE), backend,
                    settings=Settings(cache_dir=tmp_path, kv=KVSettings(blocks="off")))
    assert router.blocks is None and backend.blocks is None


@pytest.mark.parametrize("ahead", [True, False])
def test_a_shortlist_takes_every_line_from_its_block_and_equals_the_plain_path(backend, tmp_path, ahead):
    """Isolated tool lines (`Prompt.isolated`): a shortlist's lines after the first land off their anchor, and their
    blocks (compiled ahead, behind the header alone, while the live sequence held another prompt, as `nexus bench
    latency` does) are injected unrepaired: the logits are bit-identical to the plain path's, which computes each
    line behind the header and shifts it into place. Regression: llama.cpp rotates a shifted span's keys only at the
    next decode, so a line computed (its cells parked) after another was placed put that one back unrotated (logits
    off by up to 2.2); lines compiled lazily (`ahead` False) are all compiled before any is injected."""
    registry = Registry()
    registry.set_source("s", [*TOOLS, ROOM])
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    turn = "Book a single room for two nights at the Grand Plaza in Boston, starting from 10th December 2022."
    keys = ["send_message", "get_time", "get_weather", ROOM.name]
    logits, computed = {}, {}
    for mode in ("off", "on"):
        router = Router(registry, slb, FixedGate(Action.SHORTLIST), backend,
                        settings=Settings(cache_dir=tmp_path, kv=KVSettings(blocks=mode, isolated_lines=True)))
        caller = router.caller
        prompt = caller.prompts.call_prompt(turn, caller.tool_lines(keys, "signature"), blocks=True)
        assert prompt.isolated and len(prompt.blocks) == len(keys)
        backend.reset()
        router.warm()
        if mode == "on" and ahead:
            backend.prefill(replace(caller.prompts.call_prompt("what time is it?", caller.tool_lines(keys[:2], "schema")),
                                    blocks=()))
            router.blocks.compiler.compile_registry(registry, backend.model.tokenize,
                                                    backend.tokens(caller.prompts.tools_prefix(())), ["signature"])
            backend.reset()
            router.warm()
        computed[mode] = backend.prefill(prompt)
        logits[mode] = np.array(backend.context.logits(), copy=True)
        if mode == "on":
            assert router.blocks.compiler.compiled == len(registry) and router.blocks.injections == len(keys)
        backend.blocks = None
    assert np.array_equal(logits["off"], logits["on"])
    # every line was moved into place in its saved state, none by llama.cpp's shift (a K-shift of every cell)
    assert backend.context.shifts["seq_add"] == 0 < backend.context.shifts["state"]
    lines = sum(backend.count_tokens(replace(prompt, segments=(line,))) - backend.count_tokens(replace(prompt, segments=()))
                for line in caller.tool_lines(keys, "signature"))
    # compiled ahead, no line was prefilled with blocks on; compiled now, each line cost one prefill, as without blocks
    assert computed["off"] - computed["on"] == (lines if ahead else 0)


def test_isolated_lines_do_not_attend_to_each_other(backend):
    """With `Prompt.isolated` a line's KV is the same whatever line precedes it (and differs without isolation)."""
    from nexus.llm.prompts import PromptBuilder, signature_line

    weather = signature_line("get_weather", TOOLS[1])
    # two first lines of one token length, so that the get_weather line lands at the same positions after either
    firsts = [signature_line("lookup", Tool("lookup", f"Look up the {word}", {"type": "object"}, "s")) for word in ("market", "season")]
    sizes = {backend.count_tokens(replace(Prompt(()), segments=(line,))) for line in firsts}
    assert len(sizes) == 1
    states = {}
    for isolated in (True, False):
        builder = PromptBuilder(isolated_lines=isolated)
        for first in firsts:
            prompt = builder.call_prompt("weather in Oslo", [first, weather], blocks=True)
            assert prompt.isolated == isolated
            backend.reset()
            backend.prefill(prompt)
            ctx, end = backend.context, backend.count_tokens(replace(prompt, segments=prompt.segments[:4]))
            start = end - backend.count_tokens(replace(prompt, segments=(weather,))) + backend.count_tokens(Prompt(()))
            ctx.seq_cp(backend.seq, 1)
            ctx.seq_rm(1, end)
            states[isolated, first] = ctx.span_state(1, start)  # the KV of the get_weather line
    backend.reset()
    assert states[True, firsts[0]] == states[True, firsts[1]]
    assert states[False, firsts[0]] != states[False, firsts[1]]
