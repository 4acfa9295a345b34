"""`nexus bench`: measured benchmarks that write into a run folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(help="Benchmarks (results go to a run folder).", no_args_is_help=True)
err = Console(stderr=True)


def _parse_sizes(sizes: str | None) -> list[int]:
    return [int(s) for s in sizes.split(",") if s.strip()] if sizes else []


@app.command("routing")
def routing(
    tools: Optional[list[Path]] = typer.Option(None, help="tools file or folder (any format the registry loads); repeat to add distractor sources"),
    queries: Optional[Path] = typer.Option(None, help="queries JSONL ({id, query, tool, arguments})"),
    sizes: Optional[str] = typer.Option(None, help="sweep: comma-separated registry sizes built from --src"),
    src: Optional[Path] = typer.Option(None, help="BFCL folder for --sizes (default: <data_dir>/bfcl)"),
    seed: int = typer.Option(0, help="dataset seed for --sizes"),
    no_tool: int = typer.Option(0, "--no-tool", help="no-tool queries mixed in for --sizes"),
    scale: int = typer.Option(10_000, help="also time lookups on a table tiled to this many rows (0: skip)"),
    gate: bool = typer.Option(False, "--gate", help="rerank and decide with the boundary gate"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: the cache's)"),
    allow_overlap: bool = typer.Option(False, "--allow-overlap", help="with --gate: measure even if the gate trained on tools of the registry (not tool-disjoint)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-routing)"),
) -> None:
    """Top-k accuracy, MRR, INT8-vs-fp32 and lookup latency of the SLB."""
    from nexus.bench import routing as bench
    from nexus.datasets.bfcl import build_dataset, write_dataset
    from nexus.bench.runfolder import new_run_dir, write_meta
    from nexus.config import Settings
    from nexus.nexus import Nexus

    settings = Settings()
    folder = new_run_dir(run_dir, "routing")
    write_meta(folder, {"tools": tools, "queries": queries, "sizes": sizes, "seed": seed, "gate": gate,
                        "gate_model": gate_model, "settings": settings.model_dump(mode="json")})
    cases: list[tuple[list[Path], Path]] = []
    if sizes:
        source = src or settings.data_dir / "bfcl"
        for n in _parse_sizes(sizes):
            data_dir = folder / f"data_{n}"
            write_dataset(data_dir, *build_dataset(source, n, seed, no_tool))
            cases.append(([data_dir / "tools.json", *(tools or [])], data_dir / "queries.jsonl"))
    elif tools and queries:
        cases.append((tools, queries))
    else:
        raise typer.BadParameter("give --tools and --queries, or --sizes")
    nexus = Nexus.from_settings(settings.with_gate_model(gate_model), require_gate=gate)
    if gate:  # the gate's latency is measured with the threads it runs with (NEXUS_GATE_THREADS)
        import torch

        torch.set_num_threads(settings.gate.threads)
    results = []
    for tools_path, queries_path in cases:
        err.print(f"[bold]routing[/] {', '.join(map(str, tools_path))}")
        result, slb, loaded = bench.run_routing(tools_path, queries_path, nexus, folder, gate=gate, allow_overlap=allow_overlap)
        results.append(result)
        err.print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.items()})
    if scale:
        results[-1]["lookup_at_scale"] = bench.lookup_at_scale(slb, loaded, scale)
        err.print(results[-1]["lookup_at_scale"])
    output = results[0] if len(results) == 1 else {"sweep": results}
    if len(results) > 1:
        output["plot"] = str(bench.plot_sweep(folder, results))
    text = json.dumps(output, indent=2)
    (folder / "result.json").write_text(text, encoding="utf-8")
    if json_out:
        json_out.write_text(text, encoding="utf-8")
    else:
        print(text)
    err.print(f"run folder: {folder}")


@app.command("constants")
def constants(
    tools: list[Path] = typer.Option(..., help="the DEV registry's tools (never the test registry's)"),
    queries: Path = typer.Option(..., help="the DEV queries JSONL (relevant and tool: null turns)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-constants)"),
) -> None:
    """Choose the SLB fusion constants and the fallback ScoreGate's margins on a dev split (see bench/constants.py).

    Example: nexus data bfcl --size 250 --out T; nexus data bfcl --size 250 --seed 1 --exclude T --no-tool 200 --out D;
    nexus bench constants --tools D/tools.json --queries D/queries.jsonl
    """
    from nexus.bench import constants as bench
    from nexus.bench.routing import build_slb
    from nexus.bench.runfolder import new_run_dir, write_jsonl, write_meta
    from nexus.config import Settings
    from nexus.datasets import read_query_records
    from nexus.nexus import Nexus
    from nexus.slb import HybridWeights

    settings = Settings()
    folder = new_run_dir(run_dir, "constants")
    write_meta(folder, {"tools": tools, "queries": queries, "settings": settings.model_dump(mode="json")})
    registry, slb, _ = build_slb(tools, Nexus.from_settings(settings))
    records = read_query_records(queries)
    grid = bench.fusion_grid(slb, registry, records)
    write_jsonl(folder / "fusion_grid.jsonl", grid)
    best = bench.best_fusion(grid)
    slb.weights = HybridWeights(best["lexical_weight"], best["name_bonus"])
    result = {"n_tools": len(slb), "fusion": best, "score_gate": bench.score_gate_margins(slb, registry, records)}
    text = json.dumps(result, indent=2)
    (folder / "result.json").write_text(text, encoding="utf-8")
    if json_out:
        json_out.write_text(text, encoding="utf-8")
    print(text)
    err.print(f"run folder: {folder}")
