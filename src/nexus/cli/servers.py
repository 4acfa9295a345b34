"""`nexus servers`: load live MCP servers from an mcpServers config and show or call their tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nexus.config import Settings

app = typer.Typer(help="Live MCP servers (standard mcpServers config).", no_args_is_help=True)

CONFIG_HELP = "mcpServers config JSON; default: the demo servers installed in settings.servers_dir"
WORKSPACE_HELP = "folder the demo servers work in (git repo, demo.db, files); default: CACHE_DIR/workspace"


def _specs(config: Path | None, workspace: Path | None) -> dict[str, Any]:
    from nexus.errors import NexusError
    from nexus.demo import demo_servers_config
    from nexus.registry.servers import load_servers_config, parse_servers_config

    try:
        if config is not None:
            return load_servers_config(config)
        settings = Settings()
        data = demo_servers_config(settings.servers_dir, workspace or settings.cache_dir / "workspace")
        return parse_servers_config(data, f"demo servers in {settings.servers_dir}")
    except NexusError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


@app.command("list")
def list_servers(
    config: Optional[Path] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
    workspace: Optional[Path] = typer.Option(None, help=WORKSPACE_HELP),
    timeout: float = typer.Option(30.0, help="seconds each server gets to start and list its tools"),
    as_json: bool = typer.Option(False, "--json", help="print per-server results as JSON to stdout"),
) -> None:
    """Start every server, list its tools, and report which loaded; exit 1 if any failed."""
    from nexus.registry.servers import load_servers

    statuses = load_servers(_specs(config, workspace), startup_timeout=timeout)
    if as_json:
        rows = [
            {"server": s.name, "ok": s.ok, "seconds": round(s.seconds, 3), "tools": [t.name for t in s.tools],
             "error": str(s.error) if s.error else None, "skipped": list(s.skipped)}
            for s in statuses.values()
        ]
        typer.echo(json.dumps(rows, indent=2))
    else:
        table = Table("server", "tools", "status", "start s")
        for s in statuses.values():
            names = ", ".join(t.name for t in s.tools)
            status = "[green]ok[/green]" if s.ok else f"[red]{s.error}[/red]"
            if s.skipped:  # tools that failed their checks, left out of an otherwise good list
                status += "".join(f"\n[yellow]left out: {escape(why)}[/yellow]" for why in s.skipped)
            table.add_row(s.name, f"{len(s.tools)}: {names}" if s.tools else "0", status, f"{s.seconds:.2f}")
        Console().print(table)
    if not all(s.ok for s in statuses.values()):
        raise typer.Exit(1)


@app.command("call")
def call(
    server: str = typer.Argument(..., help="server name in the config"),
    tool: str = typer.Argument(..., help="tool name as the server knows it"),
    arguments: str = typer.Option("{}", "--args", help="tool arguments as a JSON object"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help=CONFIG_HELP),
    workspace: Optional[Path] = typer.Option(None, help=WORKSPACE_HELP),
) -> None:
    """Call one tool through MCP and print its result text. Example: nexus servers call time get_current_time --args '{"timezone": "UTC"}'"""
    from nexus.errors import NexusError
    from nexus.registry.servers import call_server_tool

    specs = _specs(config, workspace)
    err = Console(stderr=True)
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as exc:
        err.print(f"[red]error:[/red] --args is not JSON: {exc}")
        raise typer.Exit(2) from None
    if server not in specs or not isinstance(args, dict):
        err.print(f"[red]error:[/red] unknown server {server!r} (have: {', '.join(specs)}) or --args not an object")
        raise typer.Exit(2)
    try:
        typer.echo(call_server_tool(specs[server], server, tool, args))
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None


@app.command("demo-config")
def demo_config(workspace: Optional[Path] = typer.Option(None, help=WORKSPACE_HELP)) -> None:
    """Print the mcpServers config of the installed demo servers (save it and edit it as you like)."""
    from nexus.demo import demo_servers_config
    from nexus.errors import NexusError

    settings = Settings()
    try:
        data = demo_servers_config(settings.servers_dir, workspace or settings.cache_dir / "workspace")
    except NexusError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    typer.echo(json.dumps(data, indent=2))
