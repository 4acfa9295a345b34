"""`nexus kv compile` and `nexus bench kv`: compiled schema KV blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from nexus.cli.latency import progress_callback, quiet_threads

app = typer.Typer(help="Compiled schema KV blocks (llama.cpp backend).", no_args_is_help=True)
err = Console(stderr=True)


def _backend(settings, n_ctx: int | None = None, n_seq_max: int = 4):
    from nexus.llm.llamacpp import LlamaCppBackend

    return LlamaCppBackend(settings.llm_model, n_ctx=n_ctx or settings.n_ctx, n_threads=settings.n_threads,
                           n_seq_max=n_seq_max)


@app.command("compile")
def compile_blocks(
    tools: list[Path] = typer.Option(..., help="tools file or folder (any format the registry loads); repeat for more"),
    views: str = typer.Option("schema,signature", help="which tool lines to compile: schema and/or signature"),
) -> None:
    """Compile the KV blocks of every tool ahead of time (unchanged tools are reused: incremental).

    Example: nexus kv compile --tools data/tools.json
    """
    quiet_threads()
    from nexus.config import Settings
    from nexus.errors import NexusError
    from nexus.kv import BlockStore, SchemaBlockCompiler, model_file_hash
    from nexus.llm.prompts import PromptBuilder
    from nexus.registry import load_registry

    settings = Settings()
    view_list = [v.strip() for v in views.split(",") if v.strip()]
    if not view_list or not set(view_list) <= {"schema", "signature"}:
        raise typer.BadParameter(f"--views takes schema and/or signature; got {views!r}")
    try:
        registry = load_registry(tools)
        backend = _backend(settings, n_ctx=4096)
        try:
            store = BlockStore(settings.kv_dir(), settings.kv.budget_mb << 20)
            compiler = SchemaBlockCompiler(backend.context, store, model_file_hash(backend.model.path))
            prefix = backend.tokens(PromptBuilder().tools_prefix([]))
            update, stop = progress_callback("kv compile")
            try:
                report = compiler.compile_registry(registry, backend.model.tokenize, prefix, view_list,
                                                   progress=lambda done, total: update("tools", done, total))
            finally:
                stop()
        finally:
            backend.close()
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    out = {"compiled": report.compiled, "reused": report.reused, "failed": report.failed, "dir": str(store.folder),
           "bytes": store.size_bytes()}
    print(json.dumps(out))


def bench_kv(
    tools: Optional[Path] = typer.Option(None, help="tools file (default: a BFCL registry built from <data_dir>/bfcl)"),
    queries: Optional[Path] = typer.Option(None, help="queries JSONL ({id, query, tool, arguments})"),
    limit: int = typer.Option(8, help="cases (queries with distinct gold tools)"),
    seed: int = typer.Option(0, help="sampling seed"),
    drifts: str = typer.Option(",".join(map(str, (0, 16, 64, 256, 512, 1024, 2048))), help="drifts to sweep"),
    alternatives: str = typer.Option("epic8,epic32", help="alternative repairs also measured (epicN: the block's first N tokens re-decoded)"),
    layouts: str = typer.Option("a,b,shortlist", help="layouts to measure: a (block at its anchor), b (drift sweep), shortlist"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here (default: stdout)"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-kv)"),
) -> None:
    """Fidelity (top-1, KL vs the batch noise floor) and latency of injected KV blocks vs full re-prefill.

    Example: nexus bench kv --tools data/tools.json --queries data/queries.jsonl --limit 8 --json kv.json
    """
    quiet_threads()
    from nexus.datasets.bfcl import build_dataset, write_dataset
    from nexus.bench.kv import N_SEQ, KVBench, build_kv_cases, plot_kv, run_kv
    from nexus.bench.runfolder import new_run_dir, write_meta
    from nexus.config import Settings
    from nexus.errors import NexusError
    from nexus.datasets import read_query_records
    from nexus.kv import BlockStore, RepairPolicy, SchemaBlockCompiler, model_file_hash
    from nexus.registry import load_tools_file

    settings = Settings()
    drift_list = [int(d) for d in drifts.split(",") if d.strip()]
    alt_list = [a.strip() for a in alternatives.split(",") if a.strip()]
    if any(not (a.startswith("epic") and a[4:].isdigit()) for a in alt_list):
        raise typer.BadParameter(f"--alternatives takes epicN entries (N tokens); got {alternatives!r}")
    layout_list = [x.strip() for x in layouts.split(",") if x.strip()]
    if not layout_list or not set(layout_list) <= {"a", "b", "shortlist"}:
        raise typer.BadParameter(f"--layouts takes a, b and/or shortlist; got {layouts!r}")
    folder = new_run_dir(run_dir, "kv")
    if (tools is None) != (queries is None):
        raise typer.BadParameter("give both --tools and --queries, or neither (a BFCL registry is built)")
    try:
        if tools is None:
            data = folder / "data"
            write_dataset(data, *build_dataset(settings.data_dir / "bfcl", 100, seed))
            tools, queries = data / "tools.json", data / "queries.jsonl"
        cases = build_kv_cases(load_tools_file(tools), read_query_records(queries), limit, seed)
        kv = settings.kv
        policy = RepairPolicy(kv.threshold, kv.per_token, kv.min_tokens, kv.repair)
        backend = _backend(settings, n_ctx=max(drift_list) + 2048, n_seq_max=N_SEQ)
        try:
            store = BlockStore(folder / "blocks", 1 << 30)
            compiler = SchemaBlockCompiler(backend.context, store, model_file_hash(backend.model.path))
            write_meta(folder, {"tools": tools, "queries": queries, "limit": limit, "seed": seed, "drifts": drift_list, "alternatives": alt_list, "layouts": layout_list,
                                "model": backend.model_id, "n_ctx": backend.n_ctx, "policy": policy.__dict__,
                                "settings": settings.model_dump(mode="json")})
            update, stop = progress_callback("bench kv")
            try:
                result = run_kv(cases, KVBench(backend, compiler, policy), folder, drift_list, progress=update,
                                alternatives=alt_list, layouts=layout_list)
            finally:
                stop()
        finally:
            backend.close()
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    plots = plot_kv(folder)
    text = json.dumps(result, indent=2, default=float)
    if json_out:
        json_out.write_text(text, encoding="utf-8")
    else:
        print(text)
    err.print(f"run folder: {folder}  plots: {', '.join(map(str, plots))}")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("kv")(bench_kv)
