"""`nexus serve`: the OpenAI-compatible tool-routing proxy and the MCP gateway (thin: settings -> facade -> server)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(help="Serve Nexus: an OpenAI-compatible proxy or an MCP gateway.", no_args_is_help=True)
err = Console(stderr=True)


def _quiet_bm25s() -> None:
    import logging

    import bm25s  # noqa: F401 - imported first: it sets its own logger to DEBUG on import

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # else every index build is logged


def _serve_settings(**given):
    """Settings with the command line on top of NEXUS_SERVE_* (None: keep the environment's)."""
    from nexus.config import Settings

    settings = Settings()
    update = {k: v for k, v in given.items() if v is not None}
    return settings.model_copy(update={"serve": settings.serve.model_copy(update=update)})


@app.command("openai")
def openai(
    mode: Optional[str] = typer.Option(None, help="filter: forward to --upstream with tools narrowed | route: answer with Nexus's own LLM (default NEXUS_SERVE_MODE, filter)"),
    upstream: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL for filter mode, e.g. http://127.0.0.1:8000/v1"),
    host: Optional[str] = typer.Option(None, help="bind address (default 127.0.0.1; another address needs --token)"),
    port: Optional[int] = typer.Option(None, help="port (default 8080)"),
    token: Optional[str] = typer.Option(None, help="bearer token clients must send (default NEXUS_SERVE_TOKEN)"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
) -> None:
    """POST /v1/chat/completions (streaming or not), GET /v1/models, GET /healthz. Example:
    nexus serve openai --upstream http://127.0.0.1:8000/v1"""
    import uvicorn

    from nexus.cli.latency import quiet_threads
    from nexus.errors import NexusError
    from nexus.nexus import Nexus
    from nexus.serve.openai import create_app
    from nexus.serve.security import check_bind

    quiet_threads()
    _quiet_bm25s()
    settings = _serve_settings(mode=mode, upstream=upstream, host=host, port=port, token=token).with_gate_model(gate_model)
    serve = settings.serve
    try:
        check_bind(serve.host, serve.token)
        nexus = Nexus.from_settings(settings)
        app_ = create_app(nexus, serve)
        if serve.mode == "route":
            err.print("loading the LLM ...")
            nexus.warm()
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    err.print(f"nexus serve openai ({serve.mode}{' -> ' + serve.upstream if serve.mode == 'filter' else ''}) on "
              f"http://{serve.host}:{serve.port}/v1{' (bearer token required)' if serve.token else ''}")
    uvicorn.run(app_, host=serve.host, port=serve.port, log_level="warning")


@app.command("mcp")
def mcp(
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="mcpServers config JSON (default: the demo servers installed in .servers)"),
    transport: str = typer.Option("stdio", help="stdio (an MCP host starts the gateway) | http (streamable HTTP at /mcp)"),
    host: Optional[str] = typer.Option(None, help="http: bind address (default 127.0.0.1; another address needs --token)"),
    port: Optional[int] = typer.Option(None, help="http: port (default 8080)"),
    token: Optional[str] = typer.Option(None, help="http: bearer token clients must send (default NEXUS_SERVE_TOKEN)"),
    narrow: bool = typer.Option(False, "--narrow", help="also list the tools the last find_tools kept (tools/list_changed on change)"),
    quarantine: Optional[bool] = typer.Option(None, "--quarantine/--no-quarantine", help="leave out tools `nexus registry scan` flags (default on)"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
) -> None:
    """An MCP gateway (find_tools, call_tool) over the servers of an mcpServers config. Example:
    nexus serve mcp --config mcp.json                      # stdio, for an MCP host's config
    nexus serve mcp --config mcp.json --transport http     # http://127.0.0.1:8080/mcp"""
    import anyio

    from nexus.cli.latency import quiet_threads
    from nexus.cli.servers import _specs
    from nexus.errors import NexusError
    from nexus.nexus import Nexus
    from nexus.serve.mcp import Gateway
    from nexus.serve.security import check_bind

    quiet_threads()
    if transport not in ("stdio", "http"):
        raise typer.BadParameter("--transport is stdio or http")
    _quiet_bm25s()
    settings = _serve_settings(host=host, port=port, token=token, quarantine=quarantine).with_gate_model(gate_model)
    serve = settings.serve
    specs = _specs(config, None)
    try:
        if transport == "http":
            check_bind(serve.host, serve.token)
        gateway = Gateway(Nexus.from_settings(settings, index_path=settings.cache_dir / "gateway" / "slb.idx"), specs, serve,
                          narrow=narrow)
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if transport == "stdio":
        anyio.run(gateway.serve_stdio)
        return
    import uvicorn

    err.print(f"nexus serve mcp on http://{serve.host}:{serve.port}/mcp over {len(specs)} server(s)"
              f"{' (bearer token required)' if serve.token else ''}")
    uvicorn.run(gateway.http_app(), host=serve.host, port=serve.port, log_level="warning")
