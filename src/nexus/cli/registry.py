"""`nexus registry`: look at a registry before serving it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

app = typer.Typer(help="Registry checks.", no_args_is_help=True)


@app.command("scan")
def scan(
    tools: List[Path] = typer.Option([], help="tools file(s) (MCP, OpenAI or BFCL form)"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="mcpServers config: scan the live servers' tools"),
    low: bool = typer.Option(False, "--low", help="also list low-severity findings (common in honest tools)"),
) -> None:
    """Flag tool poisoning: instructions aimed at the model, hidden Unicode, exfiltration URLs, secret files.
    Prints JSON findings; exits 1 when a high-severity one is found (the gateway quarantines those tools)."""
    from nexus.errors import NexusError
    from nexus.registry import load_tools_file
    from nexus.registry.scan import scan_tool

    err = Console(stderr=True)
    if not tools and config is None:
        raise typer.BadParameter("give --tools FILE and/or --config mcp.json")
    try:
        found = [t for path in tools for t in load_tools_file(path)]
        if config is not None:
            from nexus.registry.servers import load_servers, load_servers_config

            for status in load_servers(load_servers_config(config)).values():
                if not status.ok:
                    err.print(f"[yellow]{status.error}[/yellow]")
                found += status.tools
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    rows = []
    for tool in found:
        findings = [f for f in scan_tool(tool) if low or f.severity == "high"]
        if findings:
            rows.append({"tool": tool.id, "findings": [f.to_dict() for f in findings]})
    typer.echo(json.dumps({"scanned": len(found), "flagged": len(rows), "tools": rows}, indent=2, ensure_ascii=False))
    if any(f["severity"] == "high" for row in rows for f in row["findings"]):
        raise typer.Exit(1)
