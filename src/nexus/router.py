"""One turn, end to end: SLB lookup -> gate decision -> LLM path -> validated call, with timings.

TTFAT (time to first argument token) runs from receiving the turn to the first token of the arguments'
JSON, routing and gate included; `context_tokens` is what the main context held when the arguments were
decoded, `full_context_tokens` what every full schema would have taken.

>>> from nexus.registry import Registry, Tool
>>> from nexus.slb import HashEmbedder, SemanticLookasideBuffer
>>> reg = Registry(); _ = reg.set_source("s", [Tool("get_time", "Current time in a timezone", {"type": "object"}, "s")])
>>> slb = SemanticLookasideBuffer(HashEmbedder()); _ = slb.sync(reg)
>>> ScoreGate(slb).decide("the current time in a timezone", hits=slb.search("the current time in a timezone")).action.value
'route'
>>> ScoreGate(slb).decide("tell me a joke", hits=slb.search("tell me a joke")).action.value
'no_tool'
"""

from __future__ import annotations

import logging
import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

from nexus.config import Settings
from nexus.gate.decision import Action, Decision
from nexus.gate.gate import contextual_turn, is_follow_up, routing_text, split_requests
from nexus.kv import attach_blocks, detach_blocks
from nexus.llm.base import LLMBackend, Prompt
from nexus.llm.calls import ToolCall, ToolCaller
from nexus.llm.prompts import Exchange, PromptBuilder, schema_line
from nexus.registry import Registry
from nexus.slb.index import Hit, SemanticLookasideBuffer

log = logging.getLogger(__name__)


class Gate(Protocol):
    """Anything that turns a turn and its SLB hits into a Decision (`nexus.gate.BoundaryGate`, `ScoreGate`). A gate
    that also has `prescore(text, keys)` and takes `decide(..., prescored=)` (`BoundaryGate`) is scored on a second
    thread while the turn is embedded, where the registry is within k (`Router.decide`)."""

    def decide(self, turn: str, history: Sequence[str] = (), hits: Sequence[Hit] | None = None) -> Decision: ...


class ScoreGate:
    """A decision from raw SLB scores, for when no trained gate exists: uncalibrated, so it routes only on a
    clear margin and otherwise shortlists. `p_top1` is a softmax over the fused scores, not a probability
    you can trust; the trained `BoundaryGate` replaces it (`nexus gate train`)."""

    # route_margin / no_tool_below: medians over three BFCL dev registries (seeds 1-3, tools disjoint from the test
    # registry) of `nexus bench constants` — the smallest margin whose ROUTEs were >= 95 % right (0.221/0.238/0.259,
    # no-tool turns routed counted as errors) and the largest top score under which NO_TOOL was >= 90 % right
    # (0.361/0.464/0.293; recall 0.54/0.59/0.24). temperature only shapes the uncalibrated p_top1 it reports.
    def __init__(self, slb: SemanticLookasideBuffer, k: int = 10, shortlist_k: int = 5, route_margin: float = 0.238,
                 no_tool_below: float = 0.361, temperature: float = 0.05):
        self.slb, self.k, self.shortlist_k = slb, k, shortlist_k
        self.route_margin, self.no_tool_below, self.temperature = route_margin, no_tool_below, temperature

    def decide(self, turn: str, history: Sequence[str] = (), hits: Sequence[Hit] | None = None) -> Decision:
        start = time.perf_counter()
        if hits is None:
            hits = self.slb.search(turn, k=self.k)
        if not hits or hits[0].score < self.no_tool_below:
            return Decision(Action.NO_TOOL, tuple(hits), 0.0, 1.0, tuple(h.score for h in hits),
                            (time.perf_counter() - start) * 1000)
        top = hits[0].score
        weights = [math.exp((h.score - top) / self.temperature) for h in hits]
        p_top1 = weights[0] / sum(weights)
        margin = top - hits[1].score if len(hits) > 1 else math.inf
        action = Action.ROUTE if margin >= self.route_margin else Action.SHORTLIST
        kept = tuple(hits[:1] if action is Action.ROUTE else hits[: self.shortlist_k])
        return Decision(action, kept, p_top1, 0.0, tuple(h.score for h in kept), (time.perf_counter() - start) * 1000)


@dataclass(frozen=True)
class Timings:
    slb_ms: float
    gate_ms: float
    llm_ms: float
    ttfat_ms: float | None      # None for a NO_TOOL answer (there are no arguments)
    total_ms: float


@dataclass(frozen=True)
class RoutedTurn:
    """Everything one turn produced."""

    turn: str
    decision: Decision
    call: ToolCall
    timings: Timings
    context_tokens: int
    full_context_tokens: int

    @property
    def tokens_saved(self) -> int:
        return max(self.full_context_tokens - self.context_tokens, 0)

    def exchange(self, result: str | None = None) -> Exchange:
        """This turn as conversation history for the next one."""
        return Exchange(self.turn, self.call.tool, self.call.arguments, result, self.call.answer)


def load_gate(slb: SemanticLookasideBuffer, registry: Registry, model_dir: Path | None, gate_settings: Any = None) -> Gate:
    """The trained BoundaryGate in `model_dir` when there is one, else `ScoreGate` (with a warning saying why);
    both take k and the shortlist size from `gate_settings` (`nexus.config.GateSettings`, default: the environment)."""
    from nexus.config import GateSettings

    gs = gate_settings or GateSettings()
    if model_dir is not None and Path(model_dir).is_dir():
        from nexus.gate import BoundaryGate, GateModel, GateModelError

        try:
            return BoundaryGate.from_settings(slb, registry, GateModel.load(model_dir), gs)
        except GateModelError as exc:
            log.warning("the gate in %s cannot be used (%s); deciding on raw SLB scores instead", model_dir, exc)
            return ScoreGate(slb, k=gs.k, shortlist_k=gs.shortlist_k)
    log.warning("no trained gate in %s; deciding on raw SLB scores (train one with `nexus gate train`)", model_dir)
    return ScoreGate(slb, k=gs.k, shortlist_k=gs.shortlist_k)


class Router:
    """SLB -> gate -> LLM path for one registry.

    >>> router = Router(registry, slb, gate, backend)  # doctest: +SKIP
    >>> routed = router.route("what time is it in Tokyo?")  # doctest: +SKIP
    >>> routed.call.tool, routed.call.arguments, routed.timings.ttfat_ms  # doctest: +SKIP
    ('get_current_time', {'timezone': 'Asia/Tokyo'}, 412.0)
    """

    def __init__(self, registry: Registry, slb: SemanticLookasideBuffer, gate: Gate, backend: LLMBackend,
                 k: int = 10, prompts: PromptBuilder | None = None, max_arg_tokens: int = 256,
                 settings: Settings | None = None):
        self.registry, self.slb, self.gate, self.backend, self.k = registry, slb, gate, backend, k
        settings = settings or Settings()
        self.caller = ToolCaller(backend, registry, prompts, max_arg_tokens, shortlist_view=settings.shortlist_view,
                                 isolated_lines=settings.kv.isolated_lines)
        self._full_tokens: tuple[str, int] | None = None
        self._worker: ThreadPoolExecutor | None = None   # the gate's second thread (`_prescore`), made on first use
        # compiled schema KV blocks for ROUTE / SHORTLIST prompts wherever the backend can take them (NEXUS_KV_BLOCKS)
        self.blocks = attach_blocks(backend, settings) if settings.kv.blocks == "on" else detach_blocks(backend)

    def warm(self) -> int:
        """Prefill the few-shot header so the first turn starts from a warm prefix, as every later one does."""
        return self.backend.prefill(self.caller.prompts.call_prompt("", []))

    def full_context_tokens(self, turn: str = "") -> int:
        """Tokens a prompt with every full schema would take (the baseline the saving is measured against)."""
        registry_hash = self.registry.content_hash()
        if self._full_tokens is None or self._full_tokens[0] != registry_hash:
            lines = [schema_line(k, t) for k, t in self.registry.items()]
            self._full_tokens = (registry_hash, self.backend.count_tokens(self.caller.prompts.call_prompt("", lines)))
        return self._full_tokens[1] + self.backend.count_tokens(Prompt((turn,))) - self.backend.count_tokens(Prompt(()))

    def _ranked_keys(self, turn: str) -> list[str]:
        scores = self.slb.scores(routing_text(turn))
        return [self.slb.keys[i] for i in sorted(range(len(scores)), key=lambda i: -scores[i])]

    def decide(self, turn: str, history: Sequence[str] = ()) -> tuple[Decision, float, float]:
        """The gate's decision for a turn, with (SLB ms, gate ms). The turn is embedded once, in one batch with
        the follow-up context the gate reads and each request of a several-request turn; every later stage
        (the gate, its per-request tools, the fallback order) reuses those vectors (`slb.embed_queries`).

        When every tool of the registry is a candidate anyway (no more tools than the gate's k), the gate's
        cross-encoder reads them on a second thread while the turn is embedded (`Prescored`): the same pairs in
        one batch, so the same decision, with the two models on the two cores instead of one after the other.
        The gate ms then count only what was left after the lookup. A gate with a `SureRoute` cascade instead
        embeds first and runs the cross-encoder only on turns the SLB is not sure of."""
        if not turn.strip():  # a blank turn asks for nothing: it never borrows the turn before it for a tool
            return Decision(Action.NO_TOOL, (), 0.0, 1.0), 0.0, 0.0
        start = time.perf_counter()
        texts = [routing_text(turn), contextual_turn(turn, history, getattr(self.gate, "context_turns", 2))]
        if getattr(self.gate, "per_request", 0) > 0:
            texts += [routing_text(r) for r in split_requests(turn)]
        ahead = self._prescore(texts[1])
        self.slb.embed_queries(list(dict.fromkeys(texts)))
        # A follow-up is looked up with its context ("and London?" after "time in Tokyo?"): every gate gets hits for
        # what the turn means (the trained gate reads the same context text itself).
        hits = self.slb.search(texts[1], k=self.k)
        looked_up = time.perf_counter()
        if ahead is None:
            decision = self.gate.decide(turn, history=list(history), hits=hits)
        else:
            decision = self.gate.decide(turn, history=list(history), hits=hits, prescored=ahead.result())
        return decision, (looked_up - start) * 1000, (time.perf_counter() - looked_up) * 1000

    def _prescore(self, text: str) -> "Future[Any] | None":
        """The gate's scores of `text` against every tool, started on the router's worker thread, where the
        registry is within k and the gate can score ahead (`BoundaryGate.prescore`); else None. Also None where the
        gate may skip the cross-encoder on a sure turn (`SureRoute`): it then scores after the embedding, on both
        cores, only when the turn is not sure."""
        may_skip = getattr(self.gate, "may_skip", None)
        if not hasattr(self.gate, "prescore") or not 0 < len(self.slb) <= self.k or (may_skip is not None and may_skip()):
            return None
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nexus-gate")
        return self._worker.submit(self.gate.prescore, text, list(self.slb.keys))

    def route(self, turn: str, history: Sequence[Exchange] = (), decision: Decision | None = None) -> RoutedTurn:
        """One turn end to end; `decision` (e.g. a client's override) skips the SLB and the gate."""
        start = time.perf_counter()
        slb_ms = gate_ms = 0.0
        if decision is None:
            decision, slb_ms, gate_ms = self.decide(turn, [ex.request for ex in history])
        decided = time.perf_counter()
        # The LLM sees earlier turns only when this one leans on them: a small model copies unrelated context.
        context = tuple(history) if history and is_follow_up(turn) else ()
        call = self.caller.call(turn, decision, context, fallback_order=lambda: self._ranked_keys(turn))
        end = call.t_end or time.perf_counter()
        ttfat = (call.t_first_arg - start) * 1000 if call.t_first_arg is not None else None
        timings = Timings(slb_ms, gate_ms, (end - decided) * 1000, ttfat, (end - start) * 1000)
        log.info("turn %r -> %s %s (ttfat %s ms)", turn[:60], decision.action.value, call.tool,
                 f"{ttfat:.0f}" if ttfat is not None else "-")
        return RoutedTurn(turn, decision, call, timings, call.prompt_tokens, self.full_context_tokens(turn))
