"""`nexus bench demo`: a request file over the demo's live MCP servers, each turn scored against the tool it needs."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from nexus.cli.output import emit_result


def bench_demo(
    requests: Path = typer.Option(..., "--requests", help="TSV (`tool[|tool...]<TAB>request`, `-` for no tool) or JSONL "
                                  "({request, expect}); {workspace} and {repo} are filled in"),
    workspace: Optional[Path] = typer.Option(None, help="folder the servers work in (default: a fresh seeded one in the "
                                             "run folder, so every run starts from the same data)"),
    scale: bool = typer.Option(False, "--scale/--no-scale", help="also ingest the public MCP catalogues' tools"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here"),
    run_dir: Optional[Path] = typer.Option(None, help="run folder (default: runs/<time>-demo)"),
) -> None:
    """Right tool, NO_TOOL where none is needed, and calls the servers accept, over your own everyday requests."""
    from nexus.bench.demo import fill, is_right, read_requests, score
    from nexus.bench.runfolder import new_run_dir, write_jsonl, write_meta
    from nexus.cli.demo import StepProgress, quiet_libraries
    from nexus.config import Settings
    from nexus.demo import prepare_workspace, run_requests, turn_row
    from nexus.errors import NexusError

    err = Console(stderr=True)
    quiet_libraries()
    settings = Settings()
    try:
        expected = read_requests(requests)
        folder = new_run_dir(run_dir, "demo")
        workspace = prepare_workspace(workspace or folder / "workspace")
    except (NexusError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    expected = fill(expected, workspace)
    write_meta(folder, {"requests": requests, "workspace": workspace, "scale": scale, "gate_model": gate_model,
                        "settings": settings.model_dump(mode="json")})
    with StepProgress(err) as step:
        try:
            turns, n_tools, failed, model_id = run_requests(settings, workspace, [e.request for e in expected], step,
                                                            scale=scale, gate_model=gate_model)
        except NexusError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
    rows = [turn_row(t) for t in turns]
    for row, e in zip(rows, expected):
        row.update(expect=list(e.tools) if e.tools is not None else None, right=is_right(row, e))
    write_jsonl(folder / "rows.jsonl", rows)
    result = {**score(rows, expected), "n_tools": n_tools, "llm": model_id, "servers_not_started": failed,
              "requests_file": str(requests)}
    emit_result(result, json_out, folder)


def register(bench_app: typer.Typer) -> None:
    bench_app.command("demo")(bench_demo)
