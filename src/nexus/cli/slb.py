"""`nexus slb`: build the lookaside buffer for a registry, and domain-adapt its embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(help="The semantic lookaside buffer.", no_args_is_help=True)
err = Console(stderr=True)


@app.command("tune")
def tune(
    src: Path = typer.Option(..., help="BFCL data folder (e.g. ../shared/data/bfcl)"),
    out: Path = typer.Option(..., help="folder for the tuned sentence-transformers model"),
    exclude_tools: Optional[Path] = typer.Option(None, help="tools file whose tools must NOT be trained on (tool-disjoint)"),
    epochs: int = typer.Option(1, help="passes over the pairs"),
) -> None:
    """Fine-tune the embedder on BFCL (query, gold tool) pairs, excluding the evaluation registry's tools."""
    from nexus.datasets.bfcl import load_single_call, to_mcp
    from nexus.registry import load_tools_file
    from nexus.registry.files import tools_from_data
    from nexus.signatures import retrieval_text
    from nexus.slb.tuning import TuningRecipe, tune_embedder

    excluded = {t.name for t in load_tools_file(exclude_tools)} if exclude_tools else set()
    pairs = []
    for item in load_single_call(src):
        if item.gold in excluded:
            continue
        (tool,) = tools_from_data([to_mcp(item.gold_function())], "bfcl", item.id)
        pairs.append((item.query, retrieval_text(tool.name, tool)))
    err.print(f"{len(pairs)} training pairs ({len(excluded)} tools excluded)")
    losses = tune_embedder(pairs, out, recipe=TuningRecipe(epochs=epochs))
    print(json.dumps({"pairs": len(pairs), "loss_first": losses[0], "loss_last": losses[-1], "out": str(out)}))
