"""Dataset folders in the generic form (`tools.json` in MCP `tools/list` form + `queries.jsonl`), as in
`../shared/data/train/`: one training registry and its labelled turns, each folder its own source.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Sequence

from nexus.datasets.queries import LabelledTurn, QueryFileError, read_query_records, tool_disjoint
from nexus.registry import Registry, Tool

# Sources whose same-domain neighbours may serve a request as well as its gold tool (APIBench: "many other models
# fit", ../shared/data/train/README.md): training never mines their negatives from a model's top-ranked tools.
AMBIGUOUS_SOURCES = ("apibench_huggingface", "apibench_tensorflowhub", "apibench_torchhub")


def dataset_folders(paths: Iterable[str | Path]) -> list[Path]:
    """Each path is a dataset folder (holding `tools.json` and `queries.jsonl`) or a folder of such folders."""
    out = []
    for path in map(Path, paths):
        if (path / "queries.jsonl").is_file():
            out.append(path)
        elif path.is_dir() and (found := sorted(p for p in path.iterdir() if (p / "queries.jsonl").is_file())):
            out.extend(found)
        else:
            raise QueryFileError(f"{path}: neither a dataset folder (tools.json + queries.jsonl) nor a folder of them")
    return out


def read_datasets(paths: Iterable[str | Path], exclude: Sequence[Tool] = (), max_per_source: int | None = None,
                  skip_sources: Iterable[str] = (), seed: int = 0) -> tuple[Registry, list[LabelledTurn], dict]:
    """One training registry and its labelled turns from dataset folders, each folder its own source (tool names
    are only unique within a folder; collisions become `<folder>.<name>`).

    Tools sharing a name, SGD family or normalised description with `exclude` (the evaluation registries) are
    dropped with every turn that needs them, so a model trained on the result is tool-disjoint from them.
    `max_per_source` caps each folder's labelled turns (a random sample) so that no large, generated source
    dominates the mix; no-tool turns (`tool: null`) are capped the same way. Returns (registry, turns, stats).
    """
    from nexus.registry.files import load_tools_file

    skip = set(skip_sources)
    registry, per_source, stats = Registry(), {}, {"sources": {}, "excluded_tools": 0, "dropped_turns": 0}
    for folder in dataset_folders(paths):
        name = folder.name
        if name in skip:
            continue
        tools = load_tools_file(folder / "tools.json", origin=name) if (folder / "tools.json").is_file() else []
        kept = tool_disjoint(tools, exclude) if exclude else tools
        stats["excluded_tools"] += len(tools) - len(kept)
        if kept:
            registry.set_source(name, kept)
        per_source[name] = (folder, {t.name for t in kept}, len(tools) - len(kept))
    for name, (folder, kept_names, n_excluded) in per_source.items():
        keys = {t.name: k for k, t in registry.items() if t.origin == name}
        relevant, no_tool, dropped = [], [], 0
        for rec in read_query_records(folder / "queries.jsonl"):
            names = rec.get("tools") if isinstance(rec.get("tools"), list) else ([rec["tool"]] if rec.get("tool") else [])
            history = tuple(h for h in rec.get("history", []) if isinstance(h, str))
            if not names:
                no_tool.append(LabelledTurn(f"{name}:{rec['id']}", rec["query"], (), history, name))
            elif all(n in keys for n in names):
                relevant.append(LabelledTurn(f"{name}:{rec['id']}", rec["query"], tuple(keys[n] for n in names), history, name))
            else:
                dropped += 1
        rng = random.Random(f"{seed}:{name}")
        for group in (relevant, no_tool):
            if max_per_source is not None and len(group) > max_per_source:
                rng.shuffle(group)
                del group[max_per_source:]
        per_source[name] = relevant + no_tool
        stats["dropped_turns"] += dropped
        stats["sources"][name] = {"tools": len(kept_names), "excluded_tools": n_excluded, "relevant": len(relevant),
                                  "no_tool": len(no_tool), "dropped_turns": dropped}
    turns = [t for name in per_source for t in per_source[name]]
    return registry, turns, stats
