"""Compiling schema KV blocks: the KV of one tool line (its full schema or its signature) computed behind the
prompt builder's fixed header, at the anchor position right after it.

Blocks are compiled lazily (the first turn that shows a tool pays one prefill of its line) or ahead of time
for a whole registry (`nexus kv compile --tools ...`); a registry change recompiles only the tools whose
rendered line changed, because the block key holds the line's content hash.

>>> compiler = SchemaBlockCompiler(backend.context, BlockStore(Path(".nexus-cache/kv")),  # doctest: +SKIP
...                                model_file_hash(backend.model.path))
>>> compiler.compile_registry(registry, backend.model.tokenize, header_tokens)  # doctest: +SKIP
CompileReport(compiled=48, reused=2, failed=0)
"""

from __future__ import annotations

import hashlib
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from nexus.kv.store import Block, BlockKey, BlockStore
from nexus.slb.store import file_sha256

log = logging.getLogger(__name__)
VIEWS = ("schema", "signature")
# part of every block key: blocks compiled before the compiler kept to the live path's cells (`canonical`) are not reused
PLACEMENT = "cells1"


def model_file_hash(path: str | Path) -> str:
    """sha256 of the model file (computed once per process and file version)."""
    return file_sha256(path)


def tokens_hash(tokens: Sequence[int]) -> str:
    return hashlib.sha256(",".join(map(str, tokens)).encode("ascii")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CompileReport:
    compiled: int
    reused: int
    failed: int = 0


class SchemaBlockCompiler:
    """Compiles and stores blocks on a `KVContext`: `prefix_seq` keeps the header warm between compiles,
    `work_seq` is where a block is decoded (both are emptied or reused; neither is the live sequence)."""

    def __init__(self, ctx: Any, store: BlockStore, model_hash: str, prefix_seq: int = 2, work_seq: int = 1):
        self.ctx, self.store, self.model_hash = ctx, store, model_hash
        self.prefix_seq, self.work_seq = prefix_seq, work_seq
        self.compiled = 0

    def key(self, prefix: Sequence[int], text: str) -> BlockKey:
        return BlockKey(self.model_hash, tokens_hash(prefix), text_hash(text), len(prefix), f"{self.ctx.layout}-{PLACEMENT}")

    @contextmanager
    def canonical(self, prefix: Sequence[int], live: int | None = None) -> Iterator[None]:
        """Compile where the live path computes. llama.cpp's KV of a token depends on the KV cells around it, not only
        on the tokens before it: with the same tokens in the same order, other cells in use (another sequence's, or the
        live sequence's past the prefix) move the next-token logits by up to ~1 on this model. The live path computes a
        line at its anchor with the prefix in the cells below it and nothing above, so that is where a block must be
        compiled; one compiled ahead while the live sequence still held the last turn's prompt (`nexus bench latency`
        at 66baefc) made nexus_kv write other arguments than nexus on 2 of 30 turns per size.

        For the duration, `live` (default: the context's pinned sequence) holds the prefix alone: what it held past the
        prefix is parked as a span and put back (into the same cells) afterwards; a live sequence that does not start
        with the prefix is emptied and given the prefix (decoded there: the pinned sequence never has its cells reused
        out of order)."""
        ctx, n, prefix = self.ctx, len(prefix), list(prefix)
        live = getattr(ctx, "pinned", None) if live is None else live
        if live is None:
            yield
            return
        parked = None
        for seq in (self.work_seq, self.prefix_seq):
            if ctx.tokens(seq) != prefix:
                ctx.drop(seq)
        held = list(ctx.tokens(live))
        if held[:n] != prefix:
            ctx.drop(live)  # another prompt (a plain answer's): the next one prefills what it needs
            ctx.decode(prefix, live, 0)
        elif len(held) > n:
            ctx.seq_cp(live, self.work_seq)
            parked = (ctx.span_state(self.work_seq, n), held[n:])
            ctx.seq_rm(live, n)
        try:
            yield
        finally:
            ctx.drop(self.work_seq)
            if parked is not None:
                payload, rest = parked
                ctx.load_span(self.work_seq, payload)
                try:
                    ctx.append_span(self.work_seq, live, n, n + len(rest), rest)
                finally:
                    ctx.drop(self.work_seq)

    def _hold_prefix(self, prefix: list[int]) -> None:
        ctx, n = self.ctx, len(prefix)
        if ctx.tokens(self.prefix_seq) == prefix:
            return
        for seq in range(ctx.n_seq_max):
            if seq not in (self.prefix_seq, self.work_seq) and ctx.tokens(seq)[:n] == prefix:
                ctx.seq_cp(seq, self.prefix_seq, n)  # shares the cells: no compute
                return
        ctx.drop(self.prefix_seq)
        ctx.decode(prefix, self.prefix_seq, 0)

    def compile(self, prefix: Sequence[int], text: str, tokens: Sequence[int]) -> Block:
        """Decode `tokens` (the tokens of `text`) behind `prefix` and store the KV of their positions."""
        prefix = list(prefix)
        self._hold_prefix(prefix)
        ctx = self.ctx
        ctx.seq_cp(self.prefix_seq, self.work_seq)
        try:
            ctx.decode(list(tokens), self.work_seq, len(prefix))
            payload = ctx.span_state(self.work_seq, len(prefix))
        finally:
            ctx.drop(self.work_seq)
        block = Block(self.key(prefix, text), tuple(tokens), payload)
        self.store.save(block)
        self.compiled += 1
        return block

    def block(self, prefix: Sequence[int], text: str, tokens: Sequence[int], live: int | None = None) -> Block:
        """The stored block for this text behind this prefix, compiled now if there is none (or it was refused);
        with `live`, compiled in that sequence's cells (`canonical`)."""
        stored = self.store.get(self.key(prefix, text))
        if stored is not None and list(stored.tokens) == list(tokens):
            return stored
        if live is None:
            return self.compile(prefix, text, tokens)
        with self.canonical(prefix, live):
            return self.compile(prefix, text, tokens)

    def compile_registry(self, registry: Any, tokenize: Callable[[str], list[int]], prefix: Sequence[int], views: Sequence[str] = VIEWS,
                         progress: Callable[[int, int], None] | None = None) -> CompileReport:
        """Blocks for every tool line of `registry` (`views`: full schema and/or signature) behind `prefix`;
        lines whose block is already stored are reused, so a registry change costs only the changed tools. Compiled
        in the live path's cells (`canonical`: the live sequence keeps a prompt that starts with `prefix`)."""
        from nexus.llm.prompts import schema_line, signature_line

        render = {"schema": schema_line, "signature": signature_line}
        items = list(registry.items())
        compiled = reused = failed = 0
        with self.canonical(prefix):
            for i, (key, tool) in enumerate(items):
                for view in views:
                    text = render[view](key, tool)
                    if self.store.get(self.key(prefix, text)) is not None:
                        reused += 1
                        continue
                    try:
                        self.compile(prefix, text, tokenize(text))
                        compiled += 1
                    except Exception as exc:  # noqa: BLE001 - one bad tool never sinks a registry
                        failed += 1
                        log.warning("KV block for %s (%s) not compiled: %s", key, view, exc)
                if progress:
                    progress(i + 1, len(items))
        return CompileReport(compiled, reused, failed)
