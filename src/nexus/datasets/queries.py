"""Labelled queries and tool equivalence: the one reader training and benchmarks share.

A queries file is JSON Lines, one turn a line: `{"id", "query", "tool", "arguments"}` (`tool` null for a turn
that needs no tool; `"tools": [...]` for multi-call turns and `"history": [...]` are also read). Two tools are
"the same" for every disjointness rule when they share a name, a Schema-Guided-Dialogue family
(`Service_N_Intent` -> `Intent`) or a normalised description.

>>> family("Movies_3_FindMovies"), family("get_weather")
('FindMovies', 'get_weather')
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from nexus.errors import NexusError
from nexus.registry import Tool

_SGD_NAME = re.compile(r"^[A-Za-z]+_\d+_([A-Za-z]+)$")


@dataclass(frozen=True)
class LabelledTurn:
    """One user turn and the tools it needs (empty: no tool applies)."""

    id: str
    query: str
    tools: tuple[str, ...] = ()
    history: tuple[str, ...] = ()
    source: str = ""          # the dataset it came from (per-source caps, leave-one-source-out)


class QueryFileError(NexusError):
    """A queries file (or training input) is unusable: bad JSONL, no usable turns."""


def read_query_records(path: str | Path) -> list[dict]:
    """Read a queries JSONL file (`{"id", "query", "tool" | "tools", "arguments"}` per line), checking each line."""
    records = []
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise QueryFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QueryFileError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("query"), str) or ("tool" not in rec and "tools" not in rec):
            raise QueryFileError(f"{path}:{number}: each line needs a string 'query' and 'tool' (null for no tool)")
        rec.setdefault("id", f"{path.stem}:{number}")
        records.append(rec)
    return records


def read_turns(path: str | Path) -> list[LabelledTurn]:
    """Labelled turns of a queries JSONL file; `tool` (a name or null) or `tools` (a list) give the labels."""
    turns = []
    for rec in read_query_records(path):
        tools = rec.get("tools") if isinstance(rec.get("tools"), list) else ([rec["tool"]] if rec.get("tool") else [])
        history = tuple(h for h in rec.get("history", []) if isinstance(h, str))
        turns.append(LabelledTurn(str(rec["id"]), rec["query"], tuple(tools), history))
    return turns


def family(name: str) -> str:
    """Schema-Guided-Dialogue families share the intent: `Movies_3_FindMovies` -> `FindMovies`."""
    match = _SGD_NAME.match(name)
    return match.group(1) if match else name


def norm_description(text: str) -> str:
    return " ".join(text.lower().split())


def equivalence_key(tool: Tool) -> tuple[str, str]:
    return family(tool.name), norm_description(tool.description)


def conflicts(tool: Tool, families: set[str], descriptions: set[str], names: set[str]) -> bool:
    """True when `tool` is (a variant of) one of the given tools: same name, SGD family or description."""
    fam, desc = equivalence_key(tool)
    return tool.name in names or fam in families or (bool(desc) and desc in descriptions)


def tool_disjoint(pool: Iterable[Tool], exclude: Iterable[Tool]) -> list[Tool]:
    """Tools of `pool` that share no name, SGD family or normalised description with `exclude`."""
    exclude = list(exclude)
    names = {t.name for t in exclude}
    families = {family(t.name) for t in exclude}
    descriptions = {norm_description(t.description) for t in exclude if t.description.strip()}
    return [t for t in pool if not conflicts(t, families, descriptions, names)]


# -- fingerprints of training tools ---------------------------------------------------------------
def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def tools_fingerprint(tools: Iterable[Tool]) -> dict:
    """What a gate (or embedder) was trained on, by the tool-disjointness rule (name, SGD family, normalised
    description), as short hashes: stored in the model header so a benchmark can refuse an overlapping registry.

    >>> fp = tools_fingerprint([Tool("Weather_1_GetWeather", "Get the weather", {"type": "object"}, "s")])
    >>> overlapping(fp, [Tool("Weather_2_GetWeather", "Other text", {"type": "object"}, "t"),
    ...                  Tool("get_time", "Get the time", {"type": "object"}, "t")])
    ['Weather_2_GetWeather']
    """
    tools = list(tools)
    return {"rule": "name|sgd-family|normalised-description sha256[:16]", "n_tools": len(tools),
            "names": sorted({_h(t.name) for t in tools}),
            "families": sorted({_h(family(t.name)) for t in tools}),
            "descriptions": sorted({_h(norm_description(t.description)) for t in tools if t.description.strip()})}


def query_hash(text: str) -> str:
    return _h(" ".join(text.lower().split()))


def queries_fingerprint(texts: Iterable[str]) -> list[str]:
    """Short hashes of the (normalised) requests a model was trained or calibrated on: a test set can leave them out.

    >>> queries_fingerprint(["Thanks!", "thanks!  "]) == [query_hash("THANKS!")]
    True
    """
    return sorted({query_hash(t) for t in texts})


def overlapping(fingerprint: dict, tools: Iterable[Tool]) -> list[str]:
    """Names of `tools` that a fingerprinted training set shares (by name, SGD family or normalised description)."""
    names, fams, descs = (set(fingerprint.get(k) or ()) for k in ("names", "families", "descriptions"))
    out = []
    for t in tools:
        desc = norm_description(t.description)
        if _h(t.name) in names or _h(family(t.name)) in fams or (desc and _h(desc) in descs):
            out.append(t.name)
    return out
