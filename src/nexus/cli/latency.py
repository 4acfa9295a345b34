"""`nexus bench latency`: TTFAT, context tokens and accuracy of Nexus vs full-schema prompting."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from nexus.cli.output import emit_result

err = Console(stderr=True)


SPIN_COUNT = "10000"  # libgomp busy-wait iterations before an idle thread sleeps (its default is 300,000)


def quiet_threads() -> None:
    """Idle OpenMP threads spin only briefly before they sleep: torch (embedder, gate) and llama.cpp share the
    cores, and long-spinning pools starve each other (measured: 15 ms -> 700 ms per query embedding on 2 busy
    cores). Not OMP_WAIT_POLICY=PASSIVE, which this used to set: llama.cpp's CPU backend runs its threads on the
    same libgomp, and with no spin at all every barrier between its graph ops sleeps and wakes — a Gemma 3 270M
    decode took twice as long (one token 10.8 -> 22.8 ms, T N=10 `full_warm` TTFAT 112 -> 90 ms without it;
    docs/history.md, KV blocks, "Session 28"). 10,000 iterations keep llama.cpp at full speed and free a core within
    microseconds. Must run before torch or llama.cpp is loaded; an explicit user setting wins."""
    os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)


def progress_callback(label: str):
    """A rich progress bar on a TTY; plain log lines on stderr otherwise. Returns (update, stop)."""
    if not sys.stderr.isatty():
        def update(stage: str, done: int, total: int) -> None:
            err.print(f"{label}: {stage} {done}/{total}")

        return update, lambda: None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err)
    task = bar.add_task(label, total=None)
    bar.start()

    def update(stage: str, done: int, total: int) -> None:
        bar.update(task, description=f"{label}: {stage}", completed=done, total=total)

    return update, bar.stop


def latency(
    tools: Path = typer.Option(..., help="tools file (any format the registry loads), at least max(--sizes) tools"),
    queries: Path = typer.Option(..., help="queries JSONL ({id, query, tool, arguments}, BFCL allowed-values form)"),
    sizes: str = typer.Option("10,25,50,100,250", help="registry sizes (nested subsets of --tools)"),
    limit: int = typer.Option(6, help="turns per size (distinct gold tools; a size below it gets further seeded draws); the README's table uses 30"),
    seed: int = typer.Option(0, help="sampling seed"),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", help="context window (default NEXUS_N_CTX); 0: the model's whole training window"),
    max_arg_tokens: int = typer.Option(256, help="cap on argument tokens per call"),
    paths: str = typer.Option("nexus,nexus_kv,full_cold,full_warm", help="paths to run (nexus always; skipped ones are null)"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here (default: stdout)"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-latency)"),
) -> None:
    """Time to first argument token and main-context tokens: Nexus vs full schemas (cold and warm prefix).

    Example: nexus bench latency --tools data/tools.json --queries data/queries.jsonl --limit 20 --json out.json
    """
    quiet_threads()
    from nexus.datasets import read_query_records as read_queries
    from nexus.bench.latency import plot_latency, pooled_cases, run_latency
    from nexus.bench.runfolder import new_run_dir, write_meta
    from nexus.config import Settings
    from nexus.errors import NexusError
    from nexus.nexus import Nexus
    from nexus.registry import load_tools_file

    settings = Settings()
    if n_ctx is not None:
        settings = settings.model_copy(update={"n_ctx": n_ctx})
    try:
        size_list = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        raise typer.BadParameter(f"--sizes must be comma-separated integers, got {sizes!r}") from None
    path_list = [p.strip() for p in paths.split(",") if p.strip()]
    if "nexus" not in path_list or not set(path_list) <= {"nexus", "nexus_kv", "full_cold", "full_warm"}:
        raise typer.BadParameter(f"--paths takes nexus plus any of nexus_kv, full_cold, full_warm; got {paths!r}")
    try:
        tool_list = load_tools_file(tools)
        cases = pooled_cases(tool_list, read_queries(queries), size_list, limit, seed)
        folder = new_run_dir(run_dir, "latency")
        update, stop = progress_callback("bench latency")
        update("loading models", 0, 1)
        settings = settings.with_gate_model(gate_model)
        nexus = Nexus.from_settings(settings)
        backend = nexus.backend

        model_dir = settings.gate_dir()
        write_meta(folder, {"tools": tools, "queries": queries, "sizes": size_list, "limit": limit, "seed": seed,
                            "paths": path_list,
                            "n_ctx": backend.n_ctx, "model": backend.model_id, "max_arg_tokens": max_arg_tokens,
                            "gate_model": str(model_dir) if model_dir.is_dir() else None,
                            "settings": settings.model_dump(mode="json")})
        try:
            result = run_latency(cases, backend, nexus.new_slb(), nexus.make_gate, folder, max_arg_tokens,
                                 progress=update, paths=path_list, k=settings.gate.k, settings=settings)
        finally:
            stop()
            backend.close()
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    plot = plot_latency(folder)
    emit_result(result, json_out, folder, f"  plot: {plot}")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("latency")(latency)
