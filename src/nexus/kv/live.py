"""KV blocks in the live path: the backend hands over a prompt whose tool lines are marked as blocks, and
`KVBlocks.fill` brings the sequence to those tokens by injecting compiled blocks where the lines land and
decoding everything else, with the repair policy's recomputation. Any failure (a refused block, a context
that cannot take the state) prefills the rest of the prompt instead, with the reason logged.

With `audit` on, every filled prompt is also re-prefilled in a spare sequence: the next-token distribution
after injection+repair is compared with it (top-1 agreement, KL) and with the same re-prefill decoded in
differently sized batches (`noise_splits`: the noise floor every KL is read against); `audits` keeps the records.

>>> blocks = attach_blocks(backend, Settings())  # doctest: +SKIP
>>> backend.generate(prompt).prefilled_tokens  # the routed schema came from its block  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from nexus.errors import NexusError
from nexus.kv.compiler import SchemaBlockCompiler, model_file_hash
from nexus.kv.fidelity import kl_from_logits, top1_agrees
from nexus.kv.injector import BlockInjector, RepairPolicy
from nexus.kv.store import BlockStore
from nexus.llm.base import reusable_prefix, unit_sizes
from nexus.llm.llamacpp import decode_from, decode_isolated

log = logging.getLogger(__name__)


def noise_splits(n: int) -> list[list[int]]:
    """Other batchings of n tokens than the prefill's units, whose KL against it is the noise floor: all in one
    batch, and the last token alone. On Gemma 3 270M such a change of batch moves the next-token distribution
    by ~1e-4..2e-3 nats, so two are averaged.

    >>> noise_splits(10), noise_splits(1)
    ([[10], [9, 1]], [[1]])
    """
    return [[n], [n - 1, 1]] if n > 1 else [[n]]


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class KVBlocks:
    """Fills prompts from compiled blocks on one `KVContext` (sequences: `scratch` for injection and compiling,
    `prefix_seq` keeps the header for the compiler, `audit_seq` for audits)."""

    def __init__(self, ctx: Any, compiler: SchemaBlockCompiler, policy: RepairPolicy, scratch: int = 1,
                 audit: bool = False, audit_seq: int = 3):
        if ctx.n_seq_max < 3 + int(audit):
            raise NexusError(f"KV blocks need a context with >= {3 + int(audit)} sequences (n_seq_max)")
        self.ctx, self.compiler, self.policy = ctx, compiler, policy
        self.injector = BlockInjector(ctx, scratch)
        self.audit, self.audit_seq = audit, audit_seq
        self.audits: list[dict[str, Any]] = []
        self.injections = 0
        if not self.injector.can_shift:
            log.warning("this model's KV memory cannot shift: blocks are used only where they land on their anchor")

    def _decode_in(self, seq: int, held: Sequence[int], tokens: Sequence[int], chunks: Sequence[int] = (),
                   isolated: tuple[Sequence[tuple[int, int, str]], Sequence[int]] | None = None) -> np.ndarray:
        """Logits after `held` + `tokens` decoded in `seq` (emptied afterwards): `tokens` in batches of `chunks`, or
        with `isolated` = (spans, cuts) its lines encoded independently and what follows them in `chunks`."""
        ctx = self.ctx
        ctx.drop(seq)
        for source in range(ctx.n_seq_max):
            if source != seq and ctx.tokens(source)[:len(held)] == list(held):
                ctx.seq_cp(source, seq, len(held))
                break
        else:
            ctx.decode(list(held), seq, 0)
        if isolated is not None:
            spans, cuts = isolated
            decode_isolated(ctx, seq, list(held) + list(tokens), spans, len(held), cuts, self.injector.scratch, chunks)
        else:
            rest, pos = list(tokens), 0
            for size in (chunks or [len(rest)]):
                ctx.decode(rest[pos:pos + size], seq, len(held) + pos)
                pos += size
        logits = np.array(ctx.logits(), copy=True)
        ctx.drop(seq)
        return logits

    def fill(self, ctx: Any, seq: int, tokens: list[int], spans: Sequence[tuple[int, int, str]], start: int,
             cuts: Sequence[int] = (), isolated: bool = False) -> int:
        """Make `seq` (holding tokens[:start]) hold `tokens`, logits after the last; `spans` are the prompt's
        block segments as (first token, end, text), `cuts` the positions where prefill starts a batch (blocks
        are compiled in those units). `isolated` (`Prompt.isolated`): each segment is encoded behind the prefix
        alone, which is what its block holds at any landing position: every block is injected, none repaired.
        Returns the tokens computed (compiles included)."""
        reference = noise = None
        if self.audit:
            held = tokens[:start]
            # the reference is the plain path's prefill: the same tokens in the same units (isolated lines: each
            # computed behind the prefix and shifted into place, as the backend does with blocks off)
            if isolated:
                after = max([start, *(end for _, end, _ in spans)])
                reference = self._decode_in(self.audit_seq, held, tokens[start:], (), (spans, cuts))
                noise = [self._decode_in(self.audit_seq, held, tokens[start:], chunks, (spans, cuts))
                         for chunks in noise_splits(len(tokens) - after)] if after < len(tokens) else []
            else:
                reference = self._decode_in(self.audit_seq, held, tokens[start:], unit_sizes(start, len(tokens), cuts))
                noise = [self._decode_in(self.audit_seq, held, tokens[start:], chunks)
                         for chunks in noise_splits(len(tokens) - start)]
        prefix = tokens[:spans[0][0]]
        pos, computed, drifts, injected = start, 0, [], 0
        try:
            plan = []
            for first, end, text in spans:
                if first < pos:
                    continue  # already held (the prefix cache kept it)
                drift = first - len(prefix)  # every block is compiled at the anchor right behind the header
                # an isolated line is what its block holds, wherever it lands (the backend only isolates lines when
                # the memory can shift): nothing to repair
                head, tail = (0, 0) if isolated else self.policy.plan(drift, end - first)
                if head + tail >= end - first or (drift and not self.injector.can_shift):
                    continue  # re-prefilled: decoded with what follows, in the very batch the plain path uses
                plan.append((first, end, text, head, tail))
            # every block is at hand (compiled now if missing) before any is injected: a compile parks what seq holds
            # past the prefix, and llama.cpp rotates a shifted block's keys only at the next decode — parked before
            # that, it would be saved and put back unrotated
            blocks = []
            for first, end, text, _, _ in plan:
                before = self.compiler.compiled
                blocks.append(self.compiler.block(prefix, text, tokens[first:end], live=seq))  # compiled in seq's cells
                if self.compiler.compiled > before:
                    computed += len(blocks[-1])  # compiled now: one prefill of the line, paid once
            pos = len(ctx.tokens(seq))  # a compile gives seq the prefix when it held less
            for (first, end, text, head, tail), block in zip(plan, blocks):
                if first > pos:
                    ctx.decode(tokens[pos:first], seq, pos, cuts)
                    computed += first - pos
                    pos = first
                if end == len(tokens):
                    tail = max(tail, 1)  # the last token is decoded for its logits
                done = self.injector.inject(seq, block, head, tail)
                computed += done.decoded
                injected += done.injected
                drifts.append(done.drift)
                pos = end
            if pos < len(tokens):
                ctx.decode(tokens[pos:], seq, pos, cuts)
                computed += len(tokens) - pos
        except NexusError as exc:
            log.warning("KV blocks not used for this prompt, prefilling it instead: %s", exc)
            ctx.drop(self.injector.scratch)
            keep = min(_common_prefix(ctx.tokens(seq), tokens), len(tokens) - 1)
            keep = reusable_prefix(keep, cuts)
            ctx.seq_rm(seq, keep)
            decode_from(ctx, seq, tokens, keep, cuts, spans, isolated, self.injector.scratch)
            computed += len(tokens) - keep
        self.injections += len(drifts)
        # between prompts only the live sequence holds cells, as without blocks: a header copy left pinned here
        # would change where llama.cpp puts the next cells (and so, in the last bits, what they compute)
        ctx.drop(self.compiler.prefix_seq)
        if reference is not None:
            logits = ctx.logits()
            record = {"drift_max": max(drifts, default=0), "blocks": len(drifts), "injected": injected,
                      "computed": computed, "top1": top1_agrees(reference, logits),
                      "kl": kl_from_logits(reference, logits),
                      "noise_kl": float(np.mean([kl_from_logits(reference, x) for x in noise])) if noise else 0.0}
            self.audits.append(record)
            log.info("KV audit: %s", record)
        return computed

    def release(self) -> None:
        """Empty the blocks' sequences (scratch, the compiler's pinned header, audit): after this only the live
        sequence holds KV cells; the next compile pins the header again (shared with the live sequence: free)."""
        for seq in {self.injector.scratch, self.compiler.prefix_seq, self.compiler.work_seq, self.audit_seq}:
            if seq < self.ctx.n_seq_max:
                self.ctx.drop(seq)


def attach_blocks(backend: Any, settings: Any) -> KVBlocks | None:
    """Give `backend` KV blocks as `settings.kv` describes (None, with the reason logged, where it cannot
    take them: another backend, too few sequences, a chat-template prompt)."""
    ctx = getattr(backend, "context", None)
    if ctx is None or not hasattr(backend, "blocks"):
        log.info("KV blocks off: backend %s has no KV context of its own", type(backend).__name__)
        return None
    kv = settings.kv
    existing = backend.blocks
    policy = RepairPolicy(kv.threshold, kv.per_token, kv.min_tokens, kv.repair)  # an unknown method is a ConfigError
    if (isinstance(existing, KVBlocks) and existing.audit == kv.audit and existing.policy == policy
            and existing.compiler.store.folder == settings.kv_dir()):
        return existing  # the same blocks: keep their in-memory cache
    try:
        store = BlockStore(settings.kv_dir(), kv.budget_mb << 20)
        compiler = SchemaBlockCompiler(ctx, store, model_file_hash(backend.model.path))
        blocks = KVBlocks(ctx, compiler, policy, audit=kv.audit)
    except (NexusError, OSError) as exc:
        log.warning("KV blocks off: %s", exc)
        return None
    backend.blocks = blocks
    return blocks


def detach_blocks(backend: Any) -> None:
    if hasattr(backend, "blocks"):
        backend.blocks = None
