"""Training material for the gate: labelled turns, self-supervised pseudo-queries, hard negatives.

Two sources, both optional:
(a) labelled turns in the `nexus data` JSONL form (`{"id", "query", "tool", "arguments"}`, `tool` null for a
    turn that needs no tool; `"tools": [...]` for multi-call turns and `"history": [...]` are also read);
(b) self-supervision from a registry: pseudo-queries synthesised from each tool's own description,
    parameter docs and name, paired with that tool.
Hard negatives for both are mined from the semantic lookaside buffer.

>>> from nexus.registry import Tool
>>> t = Tool("get_weather", "Get the current weather for a city.", {"type": "object", "properties": {
...     "city": {"type": "string", "description": "Name of the city"}}}, "w")
>>> pseudo_queries(t, random.Random(0), 3)
['Get the current for a city', 'Please get weather', 'get weather: name of the city']
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Iterable, Sequence

# The readers and the tool-equivalence rules live in `nexus.datasets` (shared with the benchmarks).
from nexus.datasets.queries import (  # noqa: F401 - re-exported for the gate's own modules
    LabelledTurn, QueryFileError, conflicts, equivalence_key, family, norm_description, queries_fingerprint,
    query_hash, read_query_records, read_turns, tool_disjoint, tools_fingerprint,
)
from nexus.registry import Registry, Tool
from nexus.signatures.compiler import first_sentence, split_identifier

TrainingDataError = QueryFileError  # the name the gate's training code uses


@dataclass(frozen=True)
class PairGroup:
    """A turn with candidate tool texts and 0/1 labels (one or more positives, or none for no-tool)."""

    turn: str
    docs: tuple[str, ...]
    labels: tuple[int, ...]
    source: str = "labelled"
    keys: tuple[str, ...] = field(default=(), compare=False)


# -- self-supervision -----------------------------------------------------------------------------
_LEADS = ("", "", "Please ", "Can you ", "I need to ", "Help me ", "I want to ", "How do I ")
_STOP = frozenset("a an the of for to and or in on with by from this that is are be given specified".split())


def _drop_words(text: str, rng: random.Random, rate: float) -> str:
    words = text.split()
    kept = [w for w in words if w.lower() in _STOP or rng.random() >= rate]
    return " ".join(kept) if len(kept) >= 2 else text


def _lead(text: str, rng: random.Random) -> str:
    lead = rng.choice(_LEADS)
    if not lead or not text:
        return text
    return lead + text[0].lower() + text[1:]


def _param_docs(tool: Tool) -> list[tuple[str, str, list]]:
    props = tool.input_schema.get("properties") or {}
    out = []
    for name, sub in props.items():
        sub = sub if isinstance(sub, dict) else {}
        enum = sub.get("enum") if isinstance(sub.get("enum"), list) else []
        out.append((split_identifier(name), first_sentence(str(sub.get("description", "")), 14), enum))
    return out


def pseudo_queries(tool: Tool, rng: random.Random, n: int = 3) -> list[str]:
    """Synthesise up to `n` distinct user-like requests for `tool` from its own documentation.

    Views: the description's first sentence (with a request lead-in and word dropout), the name's words
    with parameter names and example enum values, and a parameter's own doc tied to the name.
    """
    name_words = split_identifier(tool.name)
    desc = first_sentence(tool.description, 28).rstrip("…")
    params = _param_docs(tool)
    views = []
    if desc:
        views.append(_lead(_drop_words(desc, rng, 0.15), rng))
        views.append(_drop_words(desc, rng, 0.35))
    if params:
        picked = rng.sample(params, min(len(params), 2))
        bits = []
        for pname, _, enum in picked:
            bits.append(f"{pname} {enum[0]}" if enum and rng.random() < 0.7 else pname)
        views.append(_lead(f"{name_words} with {' and '.join(bits)}", rng))
        documented = [p for p in params if p[1]]
        if documented:
            pname, pdoc, _ = rng.choice(documented)
            views.append(f"{name_words}: {pdoc[0].lower() + pdoc[1:]}")
    views.append(_lead(name_words, rng))
    seen, out = set(), []
    for view in views:
        view = " ".join(view.split())
        if view and view.lower() not in seen:
            seen.add(view.lower())
            out.append(view)
    rng.shuffle(out)
    return out[:n]


def self_supervised_turns(registry: Registry, per_tool: int, seed: int, keys: Sequence[str] | None = None) -> list[LabelledTurn]:
    rng = random.Random(seed)
    turns = []
    for key in keys if keys is not None else registry.keys():
        for i, q in enumerate(pseudo_queries(registry.get(key), rng, per_tool)):
            turns.append(LabelledTurn(f"self:{key}:{i}", q, (key,)))
    return turns


def data_hash(groups: Iterable[PairGroup], extra: dict | None = None) -> str:
    """Content hash of the training pairs (and the recipe), stored in the model header."""
    h = hashlib.sha256()
    h.update(json.dumps(extra or {}, sort_keys=True, default=str).encode())
    for g in groups:
        h.update(json.dumps([g.turn, g.docs, g.labels], ensure_ascii=False).encode())
    return h.hexdigest()
