"""Injecting a compiled block into a live sequence, and the repair policy that decides how much of it to
recompute.

Injection (llama.cpp's sequence API): restore the block into a scratch sequence at the positions where it lands
(`KVContext.load_span`: the positions and RoPE keys of its saved state moved by the drift in numpy,
`nexus.llm.rope`, then `llama_state_seq_set_data`; llama.cpp's own `llama_memory_seq_add` only where the state
cannot be parsed, since its shift re-rotates every cell of the cache), let the live sequence share those cells
(`llama_memory_seq_cp`), empty the scratch sequence. Repair recomputes parts of the block where they land, in the live context:

- `tail` (the reference design's suffix re-decode): the block's last r tokens and so the seam to what
  follows are decoded fresh, attending to everything before them;
- `head` (EPIC-style): the block's first tokens are decoded fresh — a block compiled behind the header
  gives its first tokens an attention-sink role they do not have off the anchor.

A block whose drift (landing position - anchor) is nonzero needs shifting; memory that cannot shift
(`llama_memory_can_shift` false) gets the block's tokens prefilled instead, with the reason logged.

>>> RepairPolicy(threshold=256, per_token=0.25, min_tokens=8, method="suffix").plan(drift=100, n=40)
(0, 25)
>>> RepairPolicy(threshold=64).plan(drift=40, n=100), RepairPolicy().plan(drift=40, n=100)
((32, 0), (0, 100))
>>> RepairPolicy(threshold=256).plan(drift=0, n=40), RepairPolicy(threshold=256).plan(drift=300, n=40)
((0, 0), (0, 40))
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from nexus.errors import ConfigError
from nexus.kv.store import Block

log = logging.getLogger(__name__)
METHODS = ("suffix", "epic")


@dataclass(frozen=True)
class RepairPolicy:
    """How many of a block's tokens to recompute at a given drift: none at the anchor, r = max(min_tokens,
    ceil(per_token * drift)) of them (its last tokens for `suffix`, its first for `epic`) off it, and all of
    them (a re-prefill) beyond `threshold`."""

    threshold: int = 0   # chosen on dev split D1: only a re-prefill stayed within the noise floor off the anchor
    per_token: float = 0.0
    min_tokens: int = 32
    method: str = "epic"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"unknown KV repair method {self.method!r}; choose one of {', '.join(METHODS)}")

    def plan(self, drift: int, n: int) -> tuple[int, int]:
        """(head, tail): tokens of an n-token block decoded fresh before / after the injected part."""
        if drift == 0:
            return 0, 0
        if abs(drift) > self.threshold:
            return 0, n
        r = min(n, max(self.min_tokens, math.ceil(self.per_token * abs(drift))))
        return (r, 0) if self.method == "epic" else (0, r)


@dataclass(frozen=True)
class Injection:
    """What one injection did."""

    drift: int
    injected: int          # tokens whose KV came from the block
    decoded: int           # tokens of the block computed here (repair, or all of them on a fallback)
    seconds: float
    fallback: str | None = None   # why the block was prefilled instead of injected


class BlockInjector:
    """Appends blocks to a sequence of a `nexus.llm.native.KVContext`, using `scratch` as the scratch sequence.

    >>> injector = BlockInjector(ctx, scratch=1)  # doctest: +SKIP
    >>> injector.inject(0, block, tail=8).drift  # doctest: +SKIP
    57
    """

    def __init__(self, ctx: Any, scratch: int):
        self.ctx, self.scratch = ctx, scratch
        self.can_shift = ctx.can_shift()

    def inject(self, seq: int, block: Block, head: int = 0, tail: int = 0) -> Injection:
        ctx, start = self.ctx, time.perf_counter()
        tokens = list(block.tokens)
        n = len(tokens)
        landing = len(ctx.tokens(seq))
        drift = landing - block.anchor
        head, tail = max(head, 0), max(tail, 0)
        reason = None
        if drift != 0 and not self.can_shift:
            reason = "this model's KV memory cannot shift positions (llama_memory_can_shift is false)"
        if head + tail >= n or reason:
            if reason:
                log.warning("KV block at drift %d prefilled instead: %s", drift, reason)
            ctx.decode(tokens, seq, landing)
            return Injection(drift, 0, n, time.perf_counter() - start, reason)
        if head:
            ctx.decode(tokens[:head], seq, landing)
        ctx.load_span(self.scratch, block.payload, delta=drift)  # moved in its state: no llama.cpp K-shift
        try:
            ctx.append_span(self.scratch, seq, landing + head, landing + n - tail, tokens[head:n - tail])
        finally:
            ctx.drop(self.scratch)
        if tail:
            ctx.decode(tokens[n - tail:], seq, landing + n - tail)
        return Injection(drift, n - head - tail, head + tail, time.perf_counter() - start)
