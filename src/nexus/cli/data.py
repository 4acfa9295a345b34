"""`nexus data`: build benchmark datasets from public data folders."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(help="Build benchmark datasets.", no_args_is_help=True)


@app.command("bfcl")
def bfcl(
    src: Path = typer.Option(..., help="BFCL data folder (e.g. ../shared/data/bfcl)"),
    size: int = typer.Option(250, help="registry size N"),
    out: Path = typer.Option(..., help="output folder for tools.json and queries.jsonl"),
    seed: int = typer.Option(0, help="random seed"),
    no_tool: int = typer.Option(0, "--no-tool", help="mix in N live_irrelevance queries with tool=null"),
) -> None:
    """Write OUTDIR/tools.json (MCP tools/list form) and OUTDIR/queries.jsonl."""
    from nexus.datasets.bfcl import build_dataset, write_dataset

    tools, queries = build_dataset(src, size, seed, no_tool)
    write_dataset(out, tools, queries)
    Console(stderr=True).print(f"wrote {len(tools)} tools and {len(queries)} queries to {out}")
