"""`nexus data`: build benchmark datasets from public data folders."""

from __future__ import annotations

from pathlib import Path
from typing import List

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
    exclude: List[Path] = typer.Option([], help="dataset folder(s) (e.g. the test set) this one must be disjoint "
                                       "from: no shared tool name, SGD family, description or query id (a dev split; "
                                       "repeat it for dev splits disjoint from each other as well)"),
) -> None:
    """Write OUTDIR/tools.json (MCP tools/list form) and OUTDIR/queries.jsonl.

    Test and dev split: `nexus data bfcl --size 250 --out T` then `nexus data bfcl --size 250 --seed 1 --exclude T --out D`.
    """
    from nexus.datasets import read_query_records
    from nexus.datasets.bfcl import build_dataset, write_dataset
    from nexus.registry import load_tools_file

    exclude_tools = [t for folder in exclude for t in load_tools_file(folder / "tools.json")]
    exclude_ids = [str(q.get("id")) for folder in exclude for q in read_query_records(folder / "queries.jsonl")]
    tools, queries = build_dataset(src, size, seed, no_tool, exclude_tools, exclude_ids)
    write_dataset(out, tools, queries)
    Console(stderr=True).print(f"wrote {len(tools)} tools and {len(queries)} queries to {out}")


@app.command("heldout")
def heldout(
    src: Path = typer.Option(..., help="a dataset folder in the generic form (e.g. ../shared/data/train/no_tool)"),
    out: Path = typer.Option(..., help="queries JSONL to write"),
    model: Path = typer.Option(None, help="gate folder whose training requests are left out (default: the gate in force)"),
    n: int = typer.Option(300, help="how many requests (a seeded sample)"),
    seed: int = typer.Option(0, help="random seed"),
) -> None:
    """Requests of a dataset folder that the gate never trained or calibrated on (by its queries fingerprint)."""
    import json
    import random

    from nexus.config import Settings
    from nexus.datasets import query_hash, read_query_records
    from nexus.gate.model import GateModel

    header = GateModel.read_header(model or Settings().gate_dir())
    seen = set((header.training or {}).get("queries_fingerprint") or ())
    records = [r for r in read_query_records(src / "queries.jsonl") if query_hash(r["query"]) not in seen]
    random.Random(seed).shuffle(records)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        for rec in records[:n]:
            handle.write(json.dumps(rec, ensure_ascii=False) + "\n")
    Console(stderr=True).print(f"wrote {min(n, len(records))} of {len(records)} unseen requests to {out}")
