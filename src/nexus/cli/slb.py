"""`nexus slb`: build the lookaside buffer for a registry, and domain-adapt its embedder."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

app = typer.Typer(help="The semantic lookaside buffer.", no_args_is_help=True)
err = Console(stderr=True)


@app.command("tune")
def tune(
    out: Path = typer.Option(..., help="folder for the tuned sentence-transformers model"),
    src: Optional[Path] = typer.Option(None, help="BFCL data folder (e.g. ../shared/data/bfcl): its single-call pairs"),
    data: List[Path] = typer.Option([], help="dataset folder(s) in the generic form (tools.json + queries.jsonl), or a "
                                    "folder of them (e.g. ../shared/data/train)"),
    exclude_tools: List[Path] = typer.Option([], help="tools file(s) whose tools must NOT be trained on: excluded by "
                                             "name, SGD family or normalised description (the rule of `nexus gate pool`)"),
    max_per_source: Optional[int] = typer.Option(None, help="cap on each source's pairs (BFCL counts as one source)"),
    skip_source: List[str] = typer.Option([], help="dataset folder name(s) to leave out"),
    epochs: int = typer.Option(1, help="passes over the pairs"),
    max_length: int = typer.Option(128, help="tokens per text (tool texts are cut here; 64 keeps name and description)"),
    seed: int = typer.Option(0, help="random seed (pair order, per-source samples)"),
    hard_negatives: int = typer.Option(0, help="negatives mined per pair among its source's other tools (the base "
                                       "model's top-ranked wrong ones; none for APIBench, whose neighbours often fit), "
                                       "beside the in-batch ones"),
    compact: bool = typer.Option(False, "--compact", help="freeze word embeddings and save only the changed tensors "
                                 "in fp16 (~22 MB; rebuilt on the packaged MiniLM when loaded)"),
) -> None:
    """Fine-tune the embedder on (request, gold tool) pairs, leaving out every evaluation registry's tools."""
    import random

    from nexus.datasets import AMBIGUOUS_SOURCES, read_datasets, tool_disjoint
    from nexus.datasets.bfcl import load_single_call, to_mcp
    from nexus.registry import load_tools_file
    from nexus.registry.files import tools_from_data
    from nexus.signatures import retrieval_text
    from nexus.slb.tuning import TuningRecipe, tune_embedder

    if src is None and not data:
        raise typer.BadParameter("give --src (BFCL) and/or --data")
    excluded = [t for path in exclude_tools for t in load_tools_file(path)]
    pairs, counts, pools = [], {}, []
    if src is not None:
        bfcl = []
        for item in load_single_call(src):
            (tool,) = tools_from_data([to_mcp(item.gold_function())], "bfcl", item.id)
            if tool_disjoint([tool], excluded):
                bfcl.append((item.query, retrieval_text(tool.name, tool)))
        random.Random(seed).shuffle(bfcl)
        pairs += bfcl[:max_per_source]
        counts["bfcl"] = len(bfcl[:max_per_source])
        pools += [sorted({d for _, d in bfcl})] * len(bfcl[:max_per_source])
    if data:
        registry, turns, stats = read_datasets(data, excluded, max_per_source, skip_source, seed)
        by_source: dict[str, list[str]] = {}
        for key, tool in registry.items():
            by_source.setdefault(tool.origin, []).append(retrieval_text(key, tool))
        for turn in turns:
            if len(turn.tools) == 1:
                pairs.append((turn.query, retrieval_text(turn.tools[0], registry.get(turn.tools[0]))))
                pools.append([] if turn.source in AMBIGUOUS_SOURCES else by_source.get(turn.source, []))
                counts[turn.source] = counts.get(turn.source, 0) + 1
    err.print(f"{len(pairs)} training pairs {counts} ({len(excluded)} evaluation tools excluded)")
    recipe = TuningRecipe(epochs=epochs, seed=seed, freeze_embeddings=compact, max_seq_length=max_length,
                          hard_negatives=hard_negatives)
    meta = {"command": "nexus slb tune " + shlex.join(sys.argv[3:] if sys.argv[1:3] == ["slb", "tune"] else sys.argv[1:]),
            "pairs_per_source": counts, "excluded_tools": len(excluded)}
    losses = tune_embedder(pairs, out, recipe=recipe, compact=compact, meta=meta, pools=pools)
    print(json.dumps({"pairs": len(pairs), "loss_first": losses[0], "loss_last": losses[-1], "out": str(out)}))
