"""BFCL -> a routing registry and labelled queries (the `nexus data bfcl` protocol, see README).

Protocol: single-call queries from simple_python, multiple, live_simple, live_multiple; each gold tool uses
the definition from its own query; at most one tool per Schema-Guided-Dialogue intent family and no two
tools with the same normalised description; the registry is filled up to N with non-gold distractors under
the same rules; everything is drawn with a fixed seed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from nexus.datasets.queries import family, norm_description, tool_disjoint
from nexus.errors import NexusError, ToolLoadError
from nexus.registry import Tool
from nexus.registry.bfcl_types import to_json_schema
from nexus.registry.tool import canonical_json, check_tool

SINGLE_CALL = ("simple_python", "multiple", "live_simple", "live_multiple")
# Several calls of one function ("play X and Y"): one tool to route to, so usable as gate training turns.
ONE_TOOL_PARALLEL = ("parallel", "live_parallel")


@dataclass(frozen=True)
class BfclItem:
    id: str
    category: str
    query: str
    gold: str | None                 # gold function name; None for irrelevance
    arguments: dict[str, Any]        # BFCL allowed-values form
    functions: tuple[dict, ...]      # the record's own function docs (raw BFCL)

    def gold_function(self) -> dict | None:
        return next((f for f in self.functions if f.get("name") == self.gold), None)


def _jsonl(path: Path) -> Iterator[dict]:
    if not path.exists():
        raise NexusError(f"{path} not found; point --src at a BFCL data folder (see ../shared/data/README.md)")
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def last_user_message(question: list) -> str:
    messages = [m for turn in question for m in (turn if isinstance(turn, list) else [turn])]
    users = [m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return users[-1] if users else ""


def load_category(src: Path, category: str) -> list[BfclItem]:
    """All records of one category; calls come from possible_answer/ when it exists."""
    answers_path = src / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = {r["id"]: r["ground_truth"] for r in _jsonl(answers_path)} if answers_path.exists() else {}
    items = []
    for record in _jsonl(src / f"BFCL_v4_{category}.json"):
        calls = answers.get(record["id"], [])
        gold, arguments = None, {}
        if calls and len({name for call in calls for name in call}) == 1:  # one call, or several of one function
            gold, arguments = next(iter(calls[0].items()))
        items.append(BfclItem(record["id"], category, last_user_message(record["question"]), gold, arguments,
                              tuple(record.get("function", []))))
    return items


def load_single_call(src: Path, categories: tuple[str, ...] = SINGLE_CALL) -> list[BfclItem]:
    """Queries that need one tool (by default single-call ones) whose gold function is defined in their record."""
    items = [item for cat in categories for item in load_category(src, cat)]
    return [item for item in items if item.gold and item.gold_function() is not None]


def to_mcp(fn: dict) -> dict:
    schema = to_json_schema(fn.get("parameters") or {"type": "dict", "properties": {}})
    return {"name": fn["name"], "description": fn.get("description", ""), "inputSchema": schema}


class _Picker:
    """Accepts functions under the protocol's uniqueness rules; `exclude` (tools of another registry, e.g. the
    test registry when building a dev one) blocks their names, SGD families and descriptions too."""

    def __init__(self, exclude: Iterable[Tool] = ()) -> None:
        self.names: dict[str, str] = {}
        self.families: set[str] = set()
        self.descriptions: set[str] = set()
        self.tools: list[dict] = []
        self.blocked_names = set()
        for tool in exclude:
            self.blocked_names.add(tool.name)
            self.families.add(family(tool.name))
            self.descriptions.add(norm_description(tool.description))

    def try_add(self, fn: dict) -> bool:
        name = fn.get("name")
        if (not name or name in self.names or name in self.blocked_names or family(name) in self.families
                or norm_description(fn.get('description', '')) in self.descriptions):
            return False
        self.names[name] = canonical_json(fn)
        self.families.add(family(name))
        self.descriptions.add(norm_description(fn.get('description', '')))
        self.tools.append(to_mcp(fn))
        return True


def build_dataset(src: Path, size: int, seed: int = 0, no_tool: int = 0, exclude_tools: Iterable[Tool] = (),
                  exclude_ids: Iterable[str] = ()) -> tuple[list[dict], list[dict]]:
    """Return (tools in MCP tools/list form, queries) for a registry of `size` tools.

    A dev registry for choosing constants: another seed, `exclude_tools` = the test registry's tools (no
    shared name, SGD family or description) and `exclude_ids` = the test queries' ids (no shared turn)."""
    rng = random.Random(seed)
    skip = set(exclude_ids)
    items = [item for item in load_single_call(src) if item.id not in skip]
    rng.shuffle(items)
    gold_names = {item.gold for item in items}
    picker = _Picker(exclude_tools)
    for item in items:
        if len(picker.tools) >= size:
            break
        picker.try_add(item.gold_function())
    distractors = [fn for item in items for fn in item.functions if fn.get("name") not in gold_names]
    rng.shuffle(distractors)
    for fn in distractors:
        if len(picker.tools) >= size:
            break
        picker.try_add(fn)
    queries = [
        {"id": item.id, "query": item.query, "tool": item.gold, "arguments": item.arguments}
        for item in items
        if picker.names.get(item.gold) == canonical_json(item.gold_function())
    ]
    if no_tool:
        irrelevant = [it for it in load_category(src, "live_irrelevance") if it.id not in skip]
        rng.shuffle(irrelevant)
        queries += [{"id": it.id, "query": it.query, "tool": None, "arguments": {}} for it in irrelevant[:no_tool]]
    queries.sort(key=lambda q: q["id"])
    return picker.tools, queries


def write_dataset(out: Path, tools: list[dict], queries: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "tools.json").write_text(json.dumps({"tools": tools}, indent=1, ensure_ascii=False), encoding="utf-8")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as handle:
        for query in queries:
            handle.write(json.dumps(query, ensure_ascii=False) + "\n")


# -- multi-call turns and the tool-disjoint training pool ------------------------------------------------
def bfcl_multi_call(src: Path, category: str = "parallel_multiple") -> tuple[list[Tool], list[tuple[str, list[str]]]]:
    """BFCL multi-call turns: (the union of their function docs as tools, [(query, needed names)])."""
    # the raw ground truth lists every call (BfclItem keeps single-call answers only)
    answer_path = Path(src) / "possible_answer" / f"BFCL_v4_{category}.json"
    records = [json.loads(line) for line in answer_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    answers = {r["id"]: r["ground_truth"] for r in records}
    tools: dict[str, Tool] = {}
    turns = []
    for item in load_category(Path(src), category):
        for fn in item.functions:
            if fn.get("name") not in tools:
                tools[fn["name"]] = check_tool(to_mcp(fn), category, f"{category}:{item.id}")
        names = sorted({name for call in answers.get(item.id, []) for name in call})
        turns.append((item.query, names))
    return list(tools.values()), turns


# -- BFCL tool-disjoint training pool -------------------------------------------------------------------
def bfcl_training_pool(src: Path, exclude: Sequence[Tool]) -> tuple[list[dict], list[dict], dict]:
    """Training tools and turns from BFCL that share no tool (name, SGD family, description) with `exclude`.

    Relevant turns: the single-call categories and the parallel ones that call one function. No-tool turns: `irrelevance` only (`live_irrelevance` is kept
    for evaluation). The pool's registry is every function offered by those records, each gold tool with its
    own query's definition.
    """
    items = load_single_call(Path(src), SINGLE_CALL + ONE_TOOL_PARALLEL)
    irrelevant = load_category(Path(src), "irrelevance")
    fns: dict[str, dict] = {}
    for item in items:
        fns.setdefault(item.gold, item.gold_function())
    for item in list(items) + list(irrelevant):
        for fn in item.functions:
            if fn.get("name"):
                fns.setdefault(fn["name"], fn)
    tools, bad = [], 0
    for name, fn in fns.items():
        try:
            tools.append(check_tool(to_mcp(fn), "bfcl", f"bfcl:{name}"))
        except ToolLoadError:
            bad += 1
    kept = {t.name for t in tool_disjoint(tools, exclude)}
    pool = [t.to_mcp() for t in tools if t.name in kept]
    turns = [{"id": i.id, "query": i.query, "tool": i.gold, "arguments": i.arguments} for i in items if i.gold in kept]
    turns += [{"id": i.id, "query": i.query, "tool": None, "arguments": {}} for i in irrelevant]
    stats = {"pool_tools": len(pool), "excluded_tools": len(tools) - len(pool), "invalid_tools": bad,
             "relevant_turns": sum(1 for t in turns if t["tool"]), "no_tool_turns": len(irrelevant),
             "dropped_turns": len(items) - sum(1 for t in turns if t["tool"])}
    return pool, turns, stats
