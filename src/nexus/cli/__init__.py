"""The `nexus` command: thin typer layer over the library (parse, build settings, call)."""

from __future__ import annotations

import logging

import typer

from nexus.cli import args, bench, bench_demo, bench_serve, data, demo, gate, kv, latency, registry, serve, servers, slb

app = typer.Typer(help="Nexus: fast tool routing for agentic LLMs with large MCP registries.", no_args_is_help=True)
app.add_typer(data.app, name="data")
app.add_typer(bench.app, name="bench")
latency.register(bench.app)
kv.register(bench.app)
app.add_typer(kv.app, name="kv")
bench_serve.register(bench.app)
args.register(bench.app)
bench_demo.register(bench.app)
app.command("demo")(demo.demo)
app.add_typer(servers.app, name="servers")
app.add_typer(gate.app, name="gate")
app.add_typer(slb.app, name="slb")
app.add_typer(serve.app, name="serve")
app.add_typer(registry.app, name="registry")


@app.callback()
def main(verbose: bool = typer.Option(False, "--verbose", "-v", help="log at INFO to stderr")) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def run() -> None:
    """The console entry point: `app`, with any `NexusError` a command did not handle itself (a corrupt gate file, a
    bad tools file, a server that would not start...) printed as one `error:` line on stderr and exit status 2,
    instead of a traceback. Anything else is a bug and keeps its traceback."""
    import sys

    from nexus.errors import NexusError

    try:
        app()
    except NexusError as exc:
        print(f"error: {exc}", file=sys.stderr)  # plain text: a message may hold brackets rich would read as markup
        sys.exit(2)
