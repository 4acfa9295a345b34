"""`nexus bench args`: argument accuracy of the routed path at one registry size, with an error analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from nexus.cli.output import emit_result

err = Console(stderr=True)


def args(
    tools: Path = typer.Option(..., help="tools file (any format the registry loads)"),
    queries: Path = typer.Option(..., help="queries JSONL ({id, query, tool, arguments}, BFCL allowed-values form)"),
    size: int = typer.Option(50, help="registry size N (the sampled queries' gold tools first, then seeded distractors)"),
    limit: int = typer.Option(50, help="queries to score (distinct gold tools)"),
    seed: int = typer.Option(0, help="sampling seed"),
    exclude_tools: Optional[list[Path]] = typer.Option(
        None, help="drop queries whose gold tool shares a name, SGD family or description with these tools (dev split)"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
    max_arg_tokens: int = typer.Option(256, help="cap on argument tokens per call"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here (default: stdout)"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-args)"),
) -> None:
    """Argument accuracy (BFCL allowed-values rules) of SLB -> gate -> LLM, with one error category per wrong argument.

    Example: nexus bench args --tools test/tools.json --queries test/queries.jsonl --size 50 --limit 50
    """
    from nexus.cli.latency import progress_callback, quiet_threads

    quiet_threads()
    from nexus.bench.args import run_args
    from nexus.bench.runfolder import new_run_dir, write_meta
    from nexus.config import Settings
    from nexus.errors import NexusError
    from nexus.datasets import read_query_records
    from nexus.nexus import Nexus
    from nexus.registry import load_tools_file

    settings = Settings()
    try:
        tool_list = load_tools_file(tools)
        query_list = read_query_records(queries)
        excluded = [t for path in exclude_tools or [] for t in load_tools_file(path)]
        folder = new_run_dir(run_dir, "args")
        update, stop = progress_callback("bench args")
        update("loading models", 0, 1)
        settings = settings.with_gate_model(gate_model)
        nexus = Nexus.from_settings(settings)
        backend = nexus.backend
        model_dir = settings.gate_dir()
        write_meta(folder, {"tools": tools, "queries": queries, "size": size, "limit": limit, "seed": seed,
                            "exclude_tools": exclude_tools, "model": backend.model_id, "n_ctx": backend.n_ctx,
                            "max_arg_tokens": max_arg_tokens, "gate_model": str(model_dir) if model_dir.is_dir() else None,
                            "settings": settings.model_dump(mode="json")})
        update("routing and calling", 0, 1)
        try:
            result = run_args(tool_list, query_list, size, limit, seed, backend, nexus.new_slb(), nexus.make_gate,
                              folder, excluded, max_arg_tokens, k=settings.gate.k)
        finally:
            stop()
            backend.close()
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    emit_result(result, json_out, folder)


def register(bench_app: typer.Typer) -> None:
    bench_app.command("args")(args)
