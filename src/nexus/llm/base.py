"""The LLM backend protocol and the value objects that cross it.

A backend sees prompts as text segments. Segments are tokenized one by one and concatenated, so a
segment boundary is also a token boundary: the same tools block always yields the same tokens and a
backend with a prefix cache reuses them across turns, paths and calls (name choice, then arguments).

>>> p = Prompt(("Tools:\\n", "ping() Check the server\\n", "Request: ping it\\nTool:"))
>>> p.extend(" ping", "\\nArguments:").text.endswith("Tool: ping\\nArguments:")
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from nexus.errors import NexusError


class LLMError(NexusError):
    """The LLM backend failed (model missing, server unreachable, decoding error)."""


class ContextOverflow(LLMError):
    """A prompt does not fit the model's context window; nothing was truncated."""

    def __init__(self, needed: int, n_ctx: int, what: str = "prompt"):
        super().__init__(
            f"{what} needs {needed:,} tokens but the context holds {n_ctx:,}; route to fewer tools "
            f"(SHORTLIST) or raise NEXUS_N_CTX if the model supports it"
        )
        self.needed, self.n_ctx = needed, n_ctx


def unit_bounds(start: int, end: int, cuts: Sequence[int]) -> list[int]:
    """Where prefill batches start and stop for tokens start..end, given a prompt's cut positions (`Prompt.cuts`).

    >>> unit_bounds(10, 20, [5, 12, 15, 25]), unit_sizes(10, 20, [5, 12, 15, 25])
    ([10, 12, 15, 20], [2, 3, 5])
    """
    return [start, *sorted({c for c in cuts if start < c < end}), end]


def unit_sizes(start: int, end: int, cuts: Sequence[int]) -> list[int]:
    """The batch sizes prefill decodes tokens start..end in (`unit_bounds`)."""
    bounds = unit_bounds(start, end, cuts)
    return [b - a for a, b in zip(bounds, bounds[1:])]


def reusable_prefix(common: int, cuts: Sequence[int]) -> int:
    """How much of a cached prefix of `common` tokens a prompt with these cuts may keep: back to the start of the
    unit holding position `common` (a unit the cache holds only in part is decoded whole, so its KV never depends on
    what the sequence held before), except within the open last unit after the last cut, which may grow.

    >>> reusable_prefix(7, [2, 5, 10]), reusable_prefix(12, [2, 5, 10]), reusable_prefix(1, [2]), reusable_prefix(4, [])
    (5, 12, 0, 4)
    """
    if cuts and common < max(cuts):
        return max([0, *(c for c in cuts if c <= common)])
    return common


@dataclass(frozen=True)
class Prompt:
    """Text segments; `special` lets a chat template's control tokens (e.g. `<start_of_turn>`) parse."""

    segments: tuple[str, ...]
    special: bool = False
    blocks: tuple[int, ...] = ()   # indices of segments a backend may fill from compiled KV blocks (tool lines)
    # indices of segments where a backend with a KV cache starts a new prefill batch. llama.cpp's KV of a token
    # depends on which tokens share its batch, so a unit decoded alone (the header, each tool line) gets the same
    # KV whatever follows it — the same bits a compiled block of that line holds (`nexus.kv`)
    cuts: tuple[int, ...] = ()
    # the block segments are encoded independently: each attends to the segments before the first block (the header)
    # and to itself, not to the other blocks, each at its own position (`decode_isolated`). Then a compiled block is
    # exact wherever it lands — the KV of a line computed behind the header, shifted there — so a shortlist's every
    # line, not only its first, comes from its block with no repair; the segments after the blocks attend to all
    isolated: bool = False

    @property
    def text(self) -> str:
        return "".join(self.segments)

    def extend(self, *segments: str) -> "Prompt":
        return Prompt(self.segments + tuple(s for s in segments if s), self.special, self.blocks, self.cuts, self.isolated)


LOOP_SPAN = 48        # tokens a cycle must fill before decoding is stopped as looping
LOOP_MAX_PERIOD = 12  # longest cycle looked for


def in_a_loop(tokens: Sequence[int], span: int = LOOP_SPAN, max_period: int = LOOP_MAX_PERIOD) -> bool:
    """Whether the last `span` tokens are one cycle of at most `max_period` tokens, repeated: greedy decoding that
    got there never leaves (the model re-reads its own loop), so a constrained value would only run on to the token
    cap, be rejected as cut off, and cost a second of decoding per ~16 tokens on the bundled model.

    >>> in_a_loop([7] + [1, 2, 3] * 16), in_a_loop([1, 2, 3] * 15 + [1, 2])
    (True, False)
    >>> in_a_loop(list(range(60)))
    False
    """
    if len(tokens) < span:
        return False
    tail = tokens[-span:]
    return any(all(tail[i] == tail[i - period] for i in range(period, span)) for period in range(1, max_period + 1))


@dataclass(frozen=True)
class Generation:
    """One completion. Times are `time.perf_counter()` stamps so callers can measure from any start."""

    text: str
    prompt_tokens: int                 # tokens in the context when decoding started
    prefilled_tokens: int              # of those, how many were computed now (the rest came from the cache)
    completion_tokens: int
    t_first_token: float               # when the first output token was chosen
    t_end: float
    finished: bool = True              # False when max_tokens (or a loop, `looped`) cut the output short
    looped: bool = False               # stopped early: greedy decoding had fallen into a loop (`in_a_loop`)


@dataclass(frozen=True)
class Selection:
    """A constrained choice of one option (e.g. a tool name) continuing a prompt."""

    option: str
    prompt_tokens: int
    prefilled_tokens: int
    t_end: float
    scores: tuple[float, ...] = field(default=())  # per option where the backend can tell; empty otherwise


class BlockFiller(Protocol):
    """Fills a sequence from compiled KV blocks (`nexus.kv.KVBlocks`); a backend with a KV context of its own
    calls it for prompts that mark block segments."""

    def fill(self, ctx: Any, seq: int, tokens: list[int], spans: Sequence[tuple[int, int, str]], start: int,
             cuts: Sequence[int] = (), isolated: bool = False) -> int:
        """Make `seq` (holding tokens[:start]) hold `tokens`; `spans` = (first token, end, text) per block
        segment, `cuts` the positions where a prefill batch starts, `isolated`: the segments are encoded
        independently (`Prompt.isolated`). Returns the tokens computed."""
        ...

    def release(self) -> None:
        """Empty every sequence the blocks use besides the live one (their KV cells go back to the prompt)."""
        ...


@runtime_checkable
class LLMBackend(Protocol):
    """What the LLM path needs from a model. Implementations: `LlamaCppBackend`, `OpenAIHttpBackend`."""

    model_id: str
    n_ctx: int
    chat_template: str | None

    def count_tokens(self, prompt: Prompt) -> int:
        """Tokens the prompt occupies in the context (including BOS)."""
        ...

    def prefill(self, prompt: Prompt) -> int:
        """Bring the prompt into the prefix cache (a warm-up); returns the tokens computed now."""
        ...

    def choose(self, prompt: Prompt, options: Sequence[str], prior: Sequence[float] | None = None) -> Selection:
        """Pick the option the model rates most likely right after `prompt` (greedy, constrained); `prior`
        (one probability per option, e.g. the gate's) is fused with the model's choice where the backend can."""
        ...

    def generate(self, prompt: Prompt, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = ()) -> Generation:
        """Greedy completion, constrained by a GBNF grammar when given (then it ends when the grammar does)."""
        ...

    def reset(self) -> None:
        """Forget every cached prefix: the next call prefills from scratch."""
        ...

    def close(self) -> None:
        ...
