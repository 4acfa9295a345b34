"""The boundary gate: rescore the SLB's top-k with the cross-encoder and decide ROUTE / SHORTLIST /
FALLBACK / NO_TOOL from calibrated probabilities.

>>> from nexus.registry import Registry, Tool
>>> from nexus.slb import HashEmbedder, SemanticLookasideBuffer
>>> from nexus.gate.cross_encoder import FakePairScorer
>>> reg = Registry()
>>> _ = reg.set_source("s", [Tool("get_weather", "Current weather for a city", {"type": "object"}, "s"),
...                          Tool("get_time", "Current time in a timezone", {"type": "object"}, "s")])
>>> slb = SemanticLookasideBuffer(HashEmbedder()); _ = slb.sync(reg)
>>> gate = BoundaryGate(slb, reg, GateModel.from_scorer(FakePairScorer(), slb))
>>> gate.decide("what is the weather in Paris").candidates[0].key
'get_weather'
>>> gate.decide("and the time?", history=["what is the weather in Paris"]).candidates[0].key
'get_time'
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from nexus.gate.cross_encoder import tool_text
from nexus.gate.decision import Action, Decision
from nexus.gate.evidence import TurnEvidence, stated_expression
from nexus.gate.model import GateModel, GateModelError
from nexus.gate.policy import choose_action
from nexus.paths import PATHS, path_kind
from nexus.gate.probabilities import Thresholds, TurnProbabilities
from nexus.gate.reference import REFERENCE_TURNS, no_tool_floor
from nexus.gate.memory import asks_who
from nexus.gate.social import is_social
from nexus.gate.state import asks_state, shows_status
from nexus.registry import Registry
from nexus.slb.index import Hit, SemanticLookasideBuffer

log = logging.getLogger(__name__)

# A follow-up leans on the previous turn: it opens with a continuation, refers back, or is very short.
_CONTINUATION = re.compile(
    r"^\s*((thanks?|thank you|ok(ay)?)\W+){0,2}(and|also|or|but|then|what about|how about|same|instead|now|plus|as well|ok(ay)?,? (and|now|what))\b", re.I)
# "What time is it?", "Hi, how's it going?" and "Is it daytime in Honolulu?" (an "it" of weather or time before the
# place it is about): an "it" that points at nothing said before
_DUMMY_IT = re.compile(r"^(\s*(?:what|how)\b.*?\b(?:is|was))\s+it\b|^(\W*(?:\w+\W+)?how(?:'s|\s+is))\s+it\s+going\b"
                       r"|^(\s*(?:is|was|will)\b)\s+it\b(?=(?:\s+[\w'-]+){0,4}?\s+(?:in|at)\s+(?-i:[A-Z]))", re.I)
# "Is there anything to commit?", "There are two files": an existential "there" points at nothing said before (it had
# made the first a follow-up of "Show me the 4 most recent commits", whose count it then passed to git_log)
_EXISTENTIAL = re.compile(r"\b(?:(?:is|are|was|were|isn't|aren't|wasn't|weren't)\s+there|there\s*(?:is|are|was|were|'s|'re))\b", re.I)
# "Nice weather today, isn't it?": a tag question's "it" is the sentence's own subject (it had borrowed the relation
# request before it and deleted the relation again)
_TAG_QUESTION = re.compile(r",\s*(?:(?:is|was|does|did|do|are|were|has|have|will|wo|ca|would|should|could)(?:n't|\s+not)?\s+"
                           r"(?:it|that|this|they|you|we|he|she|there)|right|no)\s*\?\s*$", re.I)
# "Find every file with notes in its name": a possessive after a noun the turn itself names points at that noun
_BOUND = re.compile(r"(\b(?:every|each|any|all|a|an|the)\s+[\w-]+\b.*?)\b(?:its|their)\b", re.I)
# "List my branches.", "Show all tables": an order with its own object, complete in three words (it had borrowed the two
# database turns before it and listed tables); "Show more.", "Do it again." and "Delete that one." still lean back
_ORDER = re.compile(r"^\W*(?:please\s+)?(?:list|show|read|get|find|search|create|make|delete|remove|add|open|display|print|"
                    r"describe|count|stage|commit|save|write)\s+(?:(?:me|my|the|all|every|our|your)\s+)*"
                    r"(?!(?:more|again|everything|both|next|another|too|else|same|rest)\b)[a-z]{3,}", re.I)
_ANAPHORA = re.compile(r"\b(it|its|that|this|those|these|them|there|same|one|ones|again|instead)\b", re.I)
# "Remember that Bob's birthday is on 12 May": a "that" opening a clause points forward, not back
_THAT_CLAUSE = re.compile(r"\b(remember|note|know|say|said|tell \w+|told \w+|think|make sure|believe|hope|mind)\s+that\b"
                          # "Record that Alice is friends with Bob", "Remove the observation that Alice likes tennis":
                          # "that", then a clause with its named subject and verb ("Save that to notes.txt" points back)
                          r"|\b(\w+)\s+that\s+(?=(?-i:[A-Z])[\w'-]*\s+(?:is|are|was|were|has|had|will|can|does|did|"
                          r"\w+(?<!s)s)\b"
                          # "Add to Alice's entry that she likes tennis": a subject pronoun after "that" opens a clause
                          r"|(?:he|she|they|we|i|you)\s+\w+\b)", re.I)
# acknowledgements, also as "that's perfect": a turn of its own, or the lead of a sign-off ("That's perfect, thank you!"
# had read its "that" as a reference back and called the previous turn's tool)
# (also "That was really helpful, cheers!", whose "that" had borrowed the knowledge-graph request before it)
_ACK = (r"(?:(?:that|this|it)(?:'?s|\s+is|\s+was|\s+has\s+been)\s+)?(?:(?:really|very|so|super|most|incredibly)\s+)?"
        r"(?:ok(?:ay)?|great|cool|perfect|nice|fine|brilliant|wonderful|excellent|awesome|helpful|useful|lovely|amazing|fantastic)")
_CLOSERS = re.compile(rf"^\s*(thanks?( you)?|thank you|thx|{_ACK}|bye|goodbye|got it)\W*$", re.I)
# "Hello there!", "Good morning", "Hi there, how are you doing?": a turn that opens with a greeting opens a
# conversation, so it never borrows the turn before it (as a short turn the demo's "Hello there!" took "Remember Bob's
# birthday…" along and went to FALLBACK; the second read its "there" as a reference back and called read_graph)
_GREETING = re.compile(r"^\s*(hi|hello|hey|hiya|howdy|greetings|good (morning|afternoon|evening|day))\b(?!\s*(?:to|from|of)\b)"
                       r"(\W+(there|all|everyone|again)\b)?\W*", re.I)
# "Thanks, that's all for today!": a sign-off, however worded, unless it goes on to ask for more; an acknowledgement
# may lead it ("Perfect, that's everything, thanks!" had read its "that" as a reference back and called a tool)
_SIGN_OFF = re.compile(rf"^\s*(({_ACK}|awesome|excellent|wonderful|alright|all right|fine|good)\W+)?"
                       r"(thanks?|thank you|thx|cheers|bye|goodbye|that'?s (all|it|everything)|see you|see ya|cya|later|"
                       r"take care|talk (to you )?(later|soon)|ttyl|good ?night|have a (nice|good|great) (day|one|evening|night|weekend))\b", re.I)
# "Perfect, that's exactly what I needed.": satisfaction with what was done, not a question about it (its "that" had
# borrowed the turn before and called that tool again)
_SATISFIED = re.compile(rf"^\s*(?:(?:{_ACK}|thanks?|thank you)\W+)*(?:that'?s|that\s+is|this\s+is|it'?s)\s+"
                        r"(?:exactly\s+|just\s+|precisely\s+)?what\s+(?:i|we)\s+(?:needed|wanted|was\s+after|"
                        r"was\s+looking\s+for|asked\s+for)\b[^?]*$", re.I)
_MORE = re.compile(r"\?|\b(and|(?<!for )now|also|but|what|how|can|could|please)\b", re.I)  # "Bye for now!" asks for nothing
CONTEXT_CHARS = 400
EVIDENCE_RUNNERS = 3  # tools the evidence asks for (SQL runners, memory keepers), added when the SLB found none
# A turn may ask for several things ("find X. Also book Y", "do X and then Y"); each part is looked up on its own
# too. Splitting is crude ("sum of multiples of 3 and 5" splits as well): a spurious part only adds candidates.
_REQUEST_SPLIT = re.compile(r"(?<=[.?!;])\s+|,?\s+\b(?:and then|and also|and|then|also|after that|as well as|plus)\b\s+", re.I)


def is_follow_up(turn: str) -> bool:
    """Whether a turn needs recent context to be understood ("and in Celsius?", "what about Tokyo?")."""
    greeted = _GREETING.match(turn)
    if greeted:  # what follows the greeting leans back only when it opens as a continuation ("Hi, and in Celsius?")
        return bool(_CONTINUATION.match(turn[greeted.end():]))
    if _CLOSERS.match(turn) or _SATISFIED.match(turn) or (_SIGN_OFF.match(turn) and not _MORE.search(turn)):
        return False
    if is_social(turn):  # "Cool, appreciate it.", "That works for me.": thanks or assent, however short
        return False
    if asks_who(turn):  # "Who is Alice?": three words, but complete (it had borrowed two file requests and read a file)
        return False
    if opens_as_continuation(turn):
        return True
    words = turn.split()
    own = _THAT_CLAUSE.sub(lambda m: m.group(1) or m.group(2), _DUMMY_IT.sub(lambda m: m.group(1) or m.group(2) or m.group(3), turn))
    own = _BOUND.sub(r"\1", _EXISTENTIAL.sub(" ", _TAG_QUESTION.sub(" ", own)))
    # a turn that writes a path names what it is about: "Open /ws/notes.txt and show me what it says" ("it" is the
    # file), "Read /etc/passwd" (three words, which had borrowed the SQL request before it and created a table);
    # so does one that states an arithmetic expression ("Calculate 17 squared.", three words, had borrowed the time
    # request before it and converted that time again)
    anaphora = bool(_ANAPHORA.search(own))
    refers = len(words) <= 8 and anaphora
    short = len(words) <= 3 and (anaphora or not _ORDER.match(turn))
    return (short or refers) and not (PATHS.search(turn) or stated_expression(turn) is not None)


def opens_as_continuation(turn: str) -> bool:
    """Whether a turn opens by continuing the one before ("And in Lisbon?", "What about Tokyo?", "Same for Bob")."""
    return bool(_CONTINUATION.match(turn))


def routing_text(turn: str) -> str:
    """The turn as routing reads it: each file or folder path it writes becomes its kind ("a folder", "a txt file").
    A path's words are the user's own ("/work/main/.nexus-cache/workspace"), not what a tool does, and they pulled
    note and project tools ahead of `list_directory`; the LLM still sees the turn as written.

    >>> routing_text("What's inside the folder /srv/data/notes? Then read ~/a.txt and cat.JPG, not https://x.io/a")
    "What's inside the folder a folder? Then read a txt file and a jpg file, not https://x.io/a"
    >>> routing_text("4/5 stars on 22/3/2024 in the U.S., see google.com, 1.75m tall, 8 a.m., Washington D.C.")
    '4/5 stars on 22/3/2024 in the U.S., see google.com, 1.75m tall, 8 a.m., Washington D.C.'
    """
    return PATHS.sub(lambda m: path_kind(m.group(0)), turn)


def contextual_turn(turn: str, history: Sequence[str], max_turns: int = 2) -> str:
    """The text the gate reads (`routing_text`): the turn itself, or for a follow-up the recent user turns before it."""
    if not history or not is_follow_up(turn):
        return routing_text(turn)
    turn = routing_text(turn)
    context = " ".join(" ".join(routing_text(h).split()) for h in history[-max_turns:])
    budget = max(CONTEXT_CHARS - len(turn), 0)
    if len(context) > budget:
        context = context[len(context) - budget:].split(" ", 1)[-1]
    return f"{context} {turn}".strip()


def split_requests(turn: str, min_words: int = 3) -> list[str]:
    """The parts of a turn that may be separate requests (parts of `min_words` words or more); [turn] if one.

    >>> split_requests("Find the weather in Paris. Also book a table for two at 8pm")
    ['Find the weather in Paris', 'Also book a table for two at 8pm']
    """
    parts = [p.strip(" ,.") for p in _REQUEST_SPLIT.split(turn) if p and len(p.split()) >= min_words]
    return parts if len(parts) > 1 else [turn]


@dataclass(frozen=True)
class Prescored:
    """Cross-encoder logits of one turn's text against tools, by registry key (`BoundaryGate.prescore`)."""

    text: str
    logits: Mapping[str, float]


@dataclass(frozen=True)
class SureRoute:
    """The cascade in front of the cross-encoder on a registry within the gate's k, where it would read every tool:
    a turn whose SLB top score and margin over the second both reach these is ROUTEd to the SLB's top tool without
    the cross-encoder (`BoundaryGate.sure`), unless one of the gate's own rules might decide otherwise. `p_top1`
    is the share of such ROUTEs that were right on the dev splits; `threads` are the torch threads the
    cross-encoder gets when a turn is not sure: it then runs after the embedding, whose core is free again (the LLM
    never runs beside routing: the facade routes and answers under one lock)."""

    top: float
    margin: float
    p_top1: float
    threads: int = field(default_factory=lambda: min(2, os.cpu_count() or 1))


def shortlist_size(out: TurnProbabilities, minimum: int, multi: float, mass: float) -> int:
    """How many reranked candidates a SHORTLIST keeps: at least `minimum`, every candidate that looks needed
    on its own (relevance >= `multi`: the tools of a multi-call turn), and as many as it takes to hold `mass`
    of the softmax (a turn needing several tools spreads its probability over them)."""
    by_mass = int(np.searchsorted(np.cumsum(out.probs), mass) + 1)
    return max(minimum, int(np.sum(out.relevance >= multi)), min(by_mass, len(out.probs)))


class BoundaryGate:
    """Rerank and decide for one turn at a time; every decision is logged (and appended to `log_path`)."""

    def __init__(self, slb: SemanticLookasideBuffer, registry: Registry, model: GateModel, k: int = 10,
                 shortlist_k: int = 5, context_turns: int = 2, log_path: str | Path | None = None,
                 shortlist_mass: float = 0.99, per_request: int = 3, no_tool_reference: bool = True,
                 no_tool_reference_margin: float = 0.25, sure: SureRoute | None = None):
        if model.embedder_id != slb.embedder.id:
            raise GateModelError(
                f"the gate model was calibrated with embedder {model.embedder_id!r} but the SLB uses "
                f"{slb.embedder.id!r}; retrain with `nexus gate train` for this embedder"
            )
        want = model.header.slb_weights
        have = {"lexical": slb.weights.lexical, "name_bonus": slb.weights.name_bonus}
        if want and any(abs(float(want.get(n, have[n])) - have[n]) > 1e-9 for n in have):
            raise GateModelError(f"the gate model was calibrated with SLB weights {want}, the SLB uses {have}; retrain")
        self.slb, self.registry, self.model = slb, registry, model
        self.k, self.shortlist_k, self.context_turns, self.shortlist_mass = k, shortlist_k, context_turns, shortlist_mass
        self.per_request = per_request
        self.no_tool_reference, self.no_tool_reference_margin = no_tool_reference, no_tool_reference_margin
        self.sure_route = sure
        self._floor: tuple[str, float] | None = None   # (registry hash, NO_TOOL threshold on it)
        self.log_path = Path(log_path) if log_path else None
        self._texts: dict[str, str] = {}

    @classmethod
    def from_settings(cls, slb: SemanticLookasideBuffer, registry: Registry, model: GateModel, settings) -> "BoundaryGate":
        """A gate configured by `nexus.config.GateSettings` (k, shortlist size, per-request tools, context, log)."""
        return cls(slb, registry, model, k=settings.k, shortlist_k=settings.shortlist_k, context_turns=settings.context_turns,
                   log_path=settings.decision_log, per_request=settings.per_request,
                   no_tool_reference=settings.no_tool_reference,
                   no_tool_reference_margin=settings.no_tool_reference_margin, sure=settings.sure_route())

    def _tool_text(self, key: str) -> str:
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = tool_text(key, self.registry.get(key))
        return text

    def may_skip(self) -> bool:
        """Whether a turn may skip the cross-encoder here (`SureRoute`): one is set and the registry is within k."""
        return self.sure_route is not None and 0 < len(self.slb) <= self.k

    def sure(self, turn: str, text: str, hits: Sequence[Hit], evidence: TurnEvidence | None = None) -> bool:
        """Whether the SLB alone may ROUTE this turn (`SureRoute`): the registry is within k, the turn is read alone
        (not a follow-up), states no evidence (`TurnEvidence`), asks no question about state, and its SLB top score
        and margin reach the cascade's; each request of a several-request turn must have the same top tool."""
        rule = self.sure_route
        if rule is None or not hits or not self.may_skip() or text != routing_text(turn) or asks_state(turn):
            return False
        margin = hits[0].score - hits[1].score if len(hits) > 1 else math.inf
        if hits[0].score < rule.top or margin < rule.margin:
            return False
        if evidence if evidence is not None else TurnEvidence.of(turn, self.registry.tables()):
            return False
        requests = [routing_text(r) for r in split_requests(turn)]
        if len(requests) < 2:
            return True
        vectors = self.slb.embed_queries(requests)  # remembered from the router's batch
        return all((found := self.slb.search(r, k=1, query_vec=v)) and found[0].key == hits[0].key
                   for r, v in zip(requests, vectors))

    def prescore(self, text: str, keys: Sequence[str], threads: int = 1) -> Prescored:
        """Cross-encoder logits of `text` against `keys`, before the SLB has ranked them: when the registry holds
        no more tools than the gate reads (k), every tool is a candidate whatever the ranking, so the router runs
        this on one core while the turn is embedded on the other, and hands the result to `decide(prescored=)`.
        Runs on the calling thread with `threads` torch threads (its own OpenMP pool; restored afterwards)."""
        return Prescored(text, {key: float(x) for key, x in zip(keys, self._logits(text, keys, threads))})

    def _logits(self, text: str, keys: Sequence[str], threads: int | None = None, keep: bool = True) -> np.ndarray:
        """The cross-encoder's logits of `text` against `keys`, on `threads` torch threads when given (restored
        afterwards), else on the process's; `keep` as in `PairScorer.score`."""
        pairs = ([text] * len(keys), [self._tool_text(k) for k in keys])
        if threads is None:
            return self.model.scorer.score(*pairs, keep=keep)
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return self.model.scorer.score(*pairs, keep=keep)
        finally:
            torch.set_num_threads(before)

    def score(self, text: str, hits: Sequence[Hit], prescored: Prescored | None = None,
              keep: bool = True, threads: int | None = None) -> tuple[np.ndarray, TurnProbabilities]:
        """Cross-encoder logits of `hits` for `text` (taken from `prescored` when it is this text's and holds every
        hit: the same batch of pairs, scored earlier) and the calibrated probabilities. `keep` False: the scorer's
        cache is left as it was (`PairScorer.score`); `threads`: torch threads for the pairs scored here."""
        if prescored is not None and prescored.text == text and all(h.key in prescored.logits for h in hits):
            ce = np.array([prescored.logits[h.key] for h in hits], dtype=np.float32)
        else:
            ce = self._logits(text, [h.key for h in hits], threads, keep)
        dense = np.array([h.dense for h in hits])
        lexical = np.array([h.lexical for h in hits])
        return ce, self.model.calibration.apply(ce, dense, lexical, len(self.slb))

    def decide(self, turn: str, history: Sequence[str] = (), hits: Sequence[Hit] | None = None,
               prescored: Prescored | None = None) -> Decision:
        """One turn -> one Decision (candidates reranked best first; the SHORTLIST of a turn of several requests
        ends with each request's own top tools). `hits` skips the SLB search; `prescored` (`prescore` of this
        turn's context text) the cross-encoder."""
        if not turn.strip():  # a blank turn asks for nothing (and never borrows the turn before it)
            return self._logged(turn, turn, Decision(Action.NO_TOOL, (), 0.0, 1.0, (), 0.0))
        text = contextual_turn(turn, history, self.context_turns)
        if hits is None or text != turn:  # the context or a path changed what is looked up
            hits = self.slb.search(text, k=self.k)
        start = time.perf_counter()
        if not hits:
            return self._logged(turn, text, Decision(Action.NO_TOOL, (), 0.0, 1.0, (), 0.0))
        evidence = TurnEvidence.of(turn, self.registry.tables())
        if self.sure(turn, text, hits, evidence):
            p = self.sure_route.p_top1
            return self._logged(turn, text, Decision(Action.ROUTE, (hits[0],), p, 1.0 - p, (hits[0].score,),
                                                     (time.perf_counter() - start) * 1000, slb_sure=True))
        hits = [*hits, *self._evidence_runners(evidence, text, hits)]
        status = self._status_tools(turn, hits)
        listed = {h.key for h in hits}
        hits += self.slb.hits_for(text, [k for k in status if k not in listed])
        # a turn that could have skipped the cross-encoder was embedded first, not beside it: both cores are free
        ce, out = self.score(text, hits, prescored, threads=self.sure_route.threads if self.may_skip() else None)
        thresholds = self.thresholds(out.p_no_tool)
        second = float(out.relevance[1]) if len(hits) > 1 else 0.0
        action = choose_action(out.p_top1, out.p_no_tool, second, thresholds, out.p_shortlist)
        keep = list(out.order)
        asked = self._evidence_tools(evidence, hits) if action is not Action.ROUTE else set()
        if action is Action.SHORTLIST:  # a status tool leads a shortlist, but never overrules the gate's NO_TOOL
            asked |= {i for i, h in enumerate(hits) if h.key in status}
        if asked:
            # the turn states an arithmetic expression or a SQL statement (written out, or asked for in words about a
            # named table), and a candidate takes that and nothing else (`evidence`), or it asks whether something is so
            # and its server shows a status: the LLM chooses among the candidates, those first, instead of answering
            # itself or reading every schema
            keep = [i for i in keep if i in asked] + [i for i in keep if i not in asked]
            if action is not Action.SHORTLIST:
                log.info("gate: %s (p_no_tool %.3f) overruled: %r states what %s takes", action.value, out.p_no_tool,
                         turn[:60], hits[keep[0]].key)
            action = Action.SHORTLIST
        if action is Action.SHORTLIST:
            keep = keep[: shortlist_size(out, self.shortlist_k, thresholds.multi, self.shortlist_mass)]
        ranked = [hits[i] for i in keep]
        scores = [float(out.fused[i]) for i in keep]
        if action is Action.SHORTLIST:
            self._add_request_tops(turn, text, hits, out, ranked, scores)
        elapsed = (time.perf_counter() - start) * 1000
        return self._logged(turn, text, Decision(action, tuple(ranked), out.p_top1, out.p_no_tool, tuple(scores), elapsed))

    def thresholds(self, p_no_tool: float = 1.0) -> Thresholds:
        """The calibrated thresholds, with NO_TOOL (and a FALLBACK band that starts with it) raised to this registry's
        floor (`nexus.gate.reference`) when `p_no_tool` reaches the calibrated one; below it the floor cannot matter,
        so it is computed on the first turn that needs it (64 reference turns scored, ~2-3 s), once per registry."""
        calibrated = self.model.calibration.thresholds
        if not self.no_tool_reference or p_no_tool < min(calibrated.no_tool, calibrated.fallback):
            return calibrated
        floor = self.no_tool_threshold()
        fallback = max(calibrated.fallback, floor) if calibrated.fallback >= calibrated.no_tool else calibrated.fallback
        return replace(calibrated, no_tool=floor, fallback=fallback)

    def no_tool_threshold(self) -> float:
        """The NO_TOOL threshold on this registry: the calibrated one, raised to the lowest p_no_tool a reference
        turn that needs no tool gets here (`reference.no_tool_floor`)."""
        digest = self.registry.content_hash()
        if self._floor is None or self._floor[0] != digest:
            turns = list(REFERENCE_TURNS)
            vectors = self.slb.embed_queries(turns)
            scores = []
            for turn, vector in zip(turns, vectors):
                hits = self.slb.search(turn, k=self.k, query_vec=vector)
                # scored aside: the tools they read are not kept in the cache the registry's own turns use
                scores.append(self.score(turn, hits, keep=False)[1].p_no_tool if hits else 1.0)
            floor = no_tool_floor(scores, self.model.calibration.thresholds.no_tool, self.no_tool_reference_margin)
            log.info("gate: NO_TOOL threshold %.4f on this registry (calibrated %.4f; lowest reference turn %.4f)",
                     floor, self.model.calibration.thresholds.no_tool, min(scores))
            self._floor = (digest, floor)
        return self._floor[1]

    def _evidence_runners(self, evidence: TurnEvidence, text: str, hits: Sequence[Hit]) -> list[Hit]:
        """The registry's tools the turn's evidence adds (`TurnEvidence.joins`: those that run the SQL it asks for, or
        keep the assistant's memory), best first, when none of the SLB's candidates is one: "List all the titles in the
        books table." had no `read_query` among its ten (the embedder reads "titles" and "SELECT query" as unrelated),
        so its evidence had nothing to put first."""
        if not evidence.brings_tools:
            return []
        registry = self.registry
        wanted = [k for k in registry.keys() if evidence.joins(registry.get(k).description, registry.get(k).input_schema)]
        listed = {h.key for h in hits}
        if evidence.keep or evidence.forget:  # a fact to keep or forget: every tool that adds (removes) is a choice
            # ("Remember that Frank is a plumber." had listed create_relations alone, and the model related Frank to Frank)
            wanted = [k for k in wanted if k not in listed]
        elif any(k in listed for k in wanted):
            return []
        return sorted(self.slb.hits_for(text, wanted), key=lambda h: -h.score)[:EVIDENCE_RUNNERS] if wanted else []

    def _status_tools(self, turn: str, hits: Sequence[Hit]) -> list[str]:
        """For a turn that asks whether something is so, the tools of the first candidate's server whose descriptions
        say they show a status (`gate.state`: "Are there any uncommitted changes?" -> `git_status`, which the lookup
        had not listed); none in a registry of one source, where the server says nothing about the domain."""
        registry = self.registry
        if not hits or not asks_state(turn) or len(registry.sources()) < 2 or hits[0].key not in registry:
            return []
        source = registry.source_of(hits[0].key)
        return [k for k in registry.keys() if registry.source_of(k) == source and shows_status(registry.get(k).description)]

    def _evidence_tools(self, evidence: TurnEvidence, hits: Sequence[Hit]) -> set[int]:
        """Candidates (indices into `hits`) that take what the turn states (`TurnEvidence.fits`): an arithmetic
        expression for a calculator, a SQL statement for a tool that runs statements of its kind, a list of paths for
        a tool that takes a list of paths, a question about what is kept for a tool that keeps a knowledge graph or
        memory; empty when the turn states none of these."""
        if not evidence:
            return set()
        registry = self.registry
        return {i for i, hit in enumerate(hits)
                if hit.key in registry and evidence.fits(registry.get(hit.key).description, registry.get(hit.key).input_schema)}

    def _add_request_tops(self, turn: str, text: str, hits: Sequence[Hit], out: TurnProbabilities,
                          ranked: list[Hit], scores: list[float]) -> None:
        """A turn of several requests ("find X. Also book Y"): each request's own top `per_request` SLB tools are
        appended to the shortlist so a multi-call turn shows the LLM every tool it needs. They are not reranked
        (score NaN unless the cross-encoder already scored them), so single-call decisions are unchanged."""
        requests = [routing_text(r) for r in split_requests(turn)]
        if len(requests) < 2 or self.per_request < 1:
            return
        shown = {h.key for h in ranked}
        scored = {hits[i].key: (hits[i], float(out.fused[i])) for i in out.order}
        text_vec, *request_vecs = self.slb.embed_queries([text, *requests])  # remembered from the turn's one batch
        tops: list[str] = []
        for request, vec in zip(requests, request_vecs):
            tops += [h.key for h in self.slb.search(request, k=self.per_request, query_vec=vec) if h.key not in tops]
        fresh = {h.key: h for h in self.slb.hits_for(text, [k for k in tops if k not in scored], query_vec=text_vec)}
        for key in tops:
            if key not in shown:
                hit, score = scored.get(key) or (fresh[key], float("nan"))
                ranked.append(hit)
                scores.append(score)
                shown.add(key)

    def _logged(self, turn: str, text: str, decision: Decision) -> Decision:
        top = decision.candidates[0].key if decision.candidates else None
        log.info("gate %s top=%s p_top1=%.3f p_no_tool=%.3f %.1fms", decision.action.value, top, decision.p_top1,
                 decision.p_no_tool, decision.gate_ms)
        if self.log_path is not None:
            row = {"turn": turn, "context": text if text != turn else None, "action": decision.action.value,
                   "candidates": [h.key for h in decision.candidates],
                   "scores": [None if math.isnan(x) else x for x in decision.scores],
                   "p_top1": decision.p_top1, "p_no_tool": decision.p_no_tool, "gate_ms": decision.gate_ms, "slb_sure": decision.slb_sure}
            with open(self.log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        return decision
