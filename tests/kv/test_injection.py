"""Compiled blocks on the packaged Gemma 3 270M: injection against a full re-prefill of the identical tokens,
the noise floor of differently sized batches, refusal of a corrupt block, and a memory that cannot shift."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from nexus.kv import BlockInjector, BlockStore, KVBlocks, RepairPolicy, SchemaBlockCompiler
from nexus.kv.fidelity import kl_from_logits, top1_agrees
from nexus.kv.live import noise_splits
from nexus.llm.prompts import PromptBuilder, schema_line
from nexus.registry import Tool

TOOL = Tool("get_forecast", "Weather forecast for a city.", {"type": "object", "properties": {
    "city": {"type": "string", "description": "City name"}, "days": {"type": "integer", "description": "Days ahead"}},
    "required": ["city"]}, "t")
HISTORY = "Request: what time is it in Paris?\nTool: get_time\nArguments: {\"tz\": \"Europe/Paris\"}\nResult: 10:00\n"
REST = "Request: forecast for Lyon, 3 days\nTool: get_forecast\nArguments:"
LIVE, SCRATCH, PREFIX, REF = 0, 1, 2, 3


@pytest.fixture(scope="module")
def backend(gguf_path):
    from nexus.llm.llamacpp import LlamaCppBackend

    llm = LlamaCppBackend(gguf_path, n_ctx=1024, n_threads=1)
    yield llm
    llm.close()


@pytest.fixture
def parts(backend, tmp_path):
    from nexus.kv import model_file_hash

    ctx = backend.context
    ctx.clear()
    compiler = SchemaBlockCompiler(ctx, BlockStore(tmp_path), model_file_hash(backend.model.path), PREFIX, SCRATCH)
    prefix = backend.tokens(PromptBuilder().tools_prefix([]))
    text = schema_line(TOOL.name, TOOL)
    return ctx, compiler, prefix, text, backend.model.tokenize(text), backend.model.tokenize(REST)


def reprefill(ctx, held: list[int], tokens: list[int], chunks=()) -> np.ndarray:
    """`held` (shared from LIVE), then `tokens` in one batch or in `chunks`."""
    ctx.seq_cp(LIVE, REF, len(held))
    pos = 0
    for size in chunks or [len(tokens)]:
        ctx.decode(tokens[pos:pos + size], REF, len(held) + pos)
        pos += size
    logits = np.array(ctx.logits(), copy=True)
    ctx.drop(REF)
    return logits


def floor(ctx, held, tokens, reference) -> float:
    """The largest KL a mere change of batch sizes causes."""
    return max(kl_from_logits(reference, reprefill(ctx, held, tokens, c)) for c in noise_splits(len(tokens)))


def test_injection_at_the_anchor_equals_reprefill_within_the_noise_floor(parts):
    ctx, compiler, prefix, text, block, rest = parts
    ctx.decode(prefix, LIVE, 0)
    reference = reprefill(ctx, prefix, block + rest, [len(block), len(rest)])  # prefill's units: line, rest
    noise = floor(ctx, prefix, block + rest, reference)
    injection = BlockInjector(ctx, SCRATCH).inject(LIVE, compiler.block(prefix, text, block))
    assert injection.drift == 0 and injection.injected == len(block) and injection.decoded == 0
    assert ctx.tokens(LIVE) == prefix + block
    ctx.decode(rest, LIVE, len(prefix) + len(block))
    logits = np.array(ctx.logits())
    assert noise > 0  # other batches do move the distribution ...
    assert np.array_equal(reference, logits)  # ... the block compiled in prefill's units is exact at its anchor


def test_shifted_injection_then_full_repair_equals_reprefill(parts, backend):
    ctx, compiler, prefix, text, block, rest = parts
    history = backend.model.tokenize(HISTORY * 2)
    ctx.decode(prefix + history, LIVE, 0, cuts=[len(prefix)])
    held = prefix + history
    reference = reprefill(ctx, held, block + rest, [len(block), len(rest)])
    noise = floor(ctx, held, block + rest, reference)
    stored = compiler.block(prefix, text, block)
    injector = BlockInjector(ctx, SCRATCH)
    results = {}
    for name, (head, tail) in {"none": (0, 0), "all": (0, len(block)), "epic": (8, 0)}.items():
        ctx.seq_cp(LIVE, REF, len(held))
        done = injector.inject(REF, stored, head, tail)
        assert done.drift == len(history)
        ctx.decode(rest, REF, len(held) + len(block))
        assert ctx.tokens(REF) == held + block + rest
        results[name] = np.array(ctx.logits())
        ctx.drop(REF)
    assert np.array_equal(reference, results["all"])  # the block re-decoded where it lands: prefill itself
    # unrepaired, the RoPE-shifted block is close (a block at unshifted positions would be garbage) but measurably off
    kl_none = kl_from_logits(reference, results["none"])
    assert top1_agrees(reference, results["none"]) and noise < kl_none < 0.1
    assert top1_agrees(reference, results["epic"]) and kl_from_logits(reference, results["epic"]) < 0.1


def test_corrupt_block_is_refused_and_the_prompt_prefilled(parts, caplog):
    ctx, compiler, prefix, text, block, rest = parts
    ctx.decode(prefix, LIVE, 0)
    stored = compiler.block(prefix, text, block)
    path = compiler.store.path(stored.key)
    path.write_bytes(path.read_bytes()[:-100])  # truncated on disk
    compiler.store.forget(stored.key)
    blocks = KVBlocks(ctx, compiler, RepairPolicy(), scratch=SCRATCH)
    tokens = prefix + block + rest
    reference = reprefill(ctx, prefix, block + rest, [len(block), len(rest)])
    with caplog.at_level(logging.WARNING):
        computed = blocks.fill(ctx, LIVE, tokens, [(len(prefix), len(prefix) + len(block), text)], len(prefix))
    assert "refused" in caplog.text and "truncated" in compiler.store.refusals[-1]
    assert computed == len(block) + len(rest)  # the line was prefilled (and stored again), nothing corrupt injected
    assert ctx.tokens(LIVE) == tokens and top1_agrees(reference, np.array(ctx.logits()))
    again = compiler.store.load(stored.key)  # the prefilled line was compiled and stored again, whole
    assert again.tokens == stored.tokens and len(again.payload) == len(stored.payload)


class NoShiftContext:
    """A context whose memory cannot shift (e.g. a recurrent model): records what was decoded."""

    layout = "fake"
    n_seq_max = 4

    def __init__(self):
        self.held: dict[int, list[int]] = {0: list(range(10))}
        self.decoded: list[list[int]] = []

    def can_shift(self) -> bool:
        return False

    def tokens(self, seq):
        return self.held.setdefault(seq, [])

    def decode(self, tokens, seq, pos):
        assert pos == len(self.tokens(seq))
        self.decoded.append(list(tokens))
        self.held[seq].extend(tokens)

    def load_span(self, *args):
        raise AssertionError("a block that would need shifting must not be restored")

    seq_add = append_span = drop = load_span


def test_memory_that_cannot_shift_prefills_off_anchor_blocks(caplog):
    from nexus.kv.store import Block, BlockKey

    ctx = NoShiftContext()
    block = Block(BlockKey("m", "t", "c", anchor=4), (7, 8, 9), b"state")
    with caplog.at_level(logging.WARNING):
        done = BlockInjector(ctx, scratch=1).inject(0, block)
    assert done.fallback and "cannot shift" in caplog.text
    assert done.drift == 6 and done.decoded == 3 and done.injected == 0
    assert ctx.decoded == [[7, 8, 9]] and ctx.held[0][-3:] == [7, 8, 9]
