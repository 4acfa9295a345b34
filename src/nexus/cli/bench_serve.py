"""`nexus bench serve`: loopback load test of `nexus serve openai` (filter mode, then a short route-mode run)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from nexus.cli.output import emit_result

err = Console(stderr=True)


def bench_serve(
    tools: Optional[Path] = typer.Option(None, help="tools file (MCP tools/list form); default: built with --size from BFCL"),
    queries: Optional[Path] = typer.Option(None, help="queries JSONL for the requests (with --tools)"),
    size: int = typer.Option(250, help="registry size built from <data_dir>/bfcl when --tools is not given"),
    seed: int = typer.Option(0, help="dataset seed"),
    clients: int = typer.Option(32, help="concurrent clients (filter mode)"),
    requests: int = typer.Option(100, help="requests per client (filter mode)"),
    route_clients: int = typer.Option(1, help="concurrent clients of the route-mode run (0: skip it)"),
    route_requests: int = typer.Option(4, help="requests per client of the route-mode run"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here (default: stdout)"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-serve)"),
) -> None:
    """Throughput, latency p50/p99, errors, routing time per request and memory of `nexus serve openai` under
    load, on loopback, against a scripted upstream. Stops by itself. Example:
    nexus bench serve --json serve.json"""
    from nexus.bench.runfolder import new_run_dir, write_meta
    from nexus.bench.serve import LoadPlan, run_serve_bench
    from nexus.config import Settings
    from nexus.datasets import read_query_records
    from nexus.datasets.bfcl import build_dataset, write_dataset
    from nexus.errors import NexusError
    from nexus.registry.files import read_json

    settings = Settings()
    folder = new_run_dir(run_dir, "serve")
    plan = LoadPlan(clients, requests, route_clients, route_requests)
    try:
        if tools is not None:
            data = read_json(tools)
            tool_list = data["tools"] if isinstance(data, dict) else data
            query_list = read_query_records(queries) if queries else [{"query": t["name"].replace("_", " "), "tool": t["name"]} for t in tool_list]
        else:
            tool_list, query_list = build_dataset(settings.data_dir / "bfcl", size, seed)
            write_dataset(folder / "data", tool_list, query_list)
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    write_meta(folder, {"tools": tools, "queries": queries, "size": len(tool_list), "seed": seed, "plan": plan.__dict__,
                        "settings": settings.model_dump(mode="json"), "gate": str(settings.gate_dir()) if settings.gate_dir().is_dir() else "ScoreGate (no trained gate)"})
    err.print(f"bench serve: {len(tool_list)} tools, {clients} clients x {requests} requests (filter), "
              f"{route_clients} x {route_requests} (route); run folder {folder}")
    result = run_serve_bench(tool_list, query_list, folder, plan, route=route_clients > 0)
    emit_result(result, json_out, folder)


def register(bench_app: typer.Typer) -> None:
    bench_app.command("serve")(bench_serve)
