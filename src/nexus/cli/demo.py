"""`nexus demo`: the main job, offline on embedded defaults.

Starts the demo MCP servers installed in `.servers` (stdio), ingests their tools — plus, when the
evaluation data folder exists, ~640 real MCP tools from public catalogues to show scale — routes a set of
natural requests through SLB -> gate -> LLM (the packaged Gemma 3 270M writes the arguments under a
grammar), calls the chosen tool through MCP and prints one table row per turn.

`run_demo` is the library part (async, every model injectable, used by the tests); `demo` is the command.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import typer
from rich.console import Console
from rich.table import Table

log = logging.getLogger(__name__)

# (server the request needs, request); {repo} and {workspace} are filled in with the demo's folders.
DEMO_REQUESTS: tuple[tuple[str, str], ...] = (
    ("time", "What time is it in Tokyo right now?"),
    ("time", "Convert 16:30 from New York time to London time."),
    ("calculator", "What is 12.5 * 8 + 3?"),
    ("git", "Show me the commit log of the git repository at {repo}"),
    ("sqlite", "Which tables are in the SQLite database?"),
    ("filesystem", "List the files in the directory {workspace}"),
    ("memory", "Search my knowledge graph for notes about Alice"),
    ("", "Thanks, that's all for today!"),
)
SCALE_SOURCES = (("mcp", "livemcpbench", "tools.json"), ("mcp", "github-mcp-server"))


@dataclass(frozen=True)
class DemoTurn:
    request: str
    routed: Any                 # nexus.router.RoutedTurn
    server: str | None          # where the call went (None: answered, invalid, or a catalogue-only tool)
    result: str | None
    error: str | None


def scale_registry_tools(data_dir: Path, live_names: set[str]) -> list[tuple[str, list[Any]]]:
    """(origin, tools) from the public MCP catalogues in `data_dir`, without copies of the live servers' tools."""
    from nexus.errors import ToolLoadError
    from nexus.registry import load_tools_file

    sources = []
    for parts in SCALE_SOURCES:
        path = Path(data_dir, *parts)
        if not path.exists():
            continue
        try:
            tools = load_tools_file(path)
        except ToolLoadError as exc:
            log.warning("scale registry: %s", exc)
            continue
        by_origin: dict[str, list[Any]] = {}
        for tool in tools:
            if tool.name not in live_names:  # the catalogues list the same servers the demo runs live
                by_origin.setdefault(tool.origin, []).append(tool)
        sources += [(f"catalogue:{origin}", group) for origin, group in by_origin.items()]
    return sources


async def run_demo(servers: dict[str, Any], requests: Sequence[str], *, backend: Any, slb_factory: Callable[[Any], Any],
                   gate_factory: Callable[[Any, Any], Any], extra_sources: Callable[[set[str]], list] = lambda names: [],
                   step: Callable[[str], None] = lambda what: None) -> tuple[list[DemoTurn], int, dict[str, str]]:
    """Start `servers`, build the registry, route and call every request; returns (turns, tools, server errors)."""
    from nexus.errors import NexusError, ServerError
    from nexus.registry import Registry
    from nexus.registry.servers import McpHub
    from nexus.router import Router

    step("starting MCP servers")
    async with McpHub(servers) as hub:
        registry = Registry()
        hub.load_into(registry)
        failed = {name: str(s.error) for name, s in hub.statuses.items() if not s.ok}
        for origin, tools in extra_sources({t.name for t in hub.tools()}):
            registry.set_source(origin, tools)
        step(f"indexing {len(registry)} tools")
        slb = slb_factory(registry)
        step("loading the gate")
        gate = gate_factory(slb, registry)
        step("warming the LLM")
        router = Router(registry, slb, gate, backend)
        router.warm()
        turns, history = [], []
        for number, request in enumerate(requests, 1):
            step(f"turn {number}/{len(requests)}: {request[:50]}")
            routed = router.route(request, history[-2:])
            call = routed.call
            server = result = error = None
            if call.tool is not None and call.valid:
                tool = registry.get(call.tool)
                if tool.origin in hub.servers:
                    server = tool.origin
                    try:
                        result = await hub.call_tool(server, tool.name, call.arguments)
                    except ServerError as exc:
                        error = str(exc)
                else:
                    error = f"{call.tool} is a catalogue tool (from {tool.origin}); no live server to call"
            elif call.tool is None and call.answer is None:
                error = "; ".join(call.errors) or "no valid call"
            elif call.tool is not None:
                error = "invalid arguments: " + "; ".join(call.errors)
            turns.append(DemoTurn(request, routed, server, result, error))
            history.append(routed.exchange(result if result is not None else error))
        return turns, len(registry), failed


def demo_gate(slb: Any, registry: Any, settings: Any, model_dir: Path | None, train: bool, budget_s: float,
              step: Callable[[str], None], config: Any = None) -> Any:
    """The gate the demo decides with: a trained model when one exists (the given folder, NEXUS_GATE_MODEL, the
    cache's default, or the demo's own), else with `train` (the default) one trained now, on first use, within
    `budget_s` seconds and kept in the cache, else raw SLB scores (`ScoreGate`)."""
    from nexus.router import ScoreGate, load_gate

    from nexus.errors import ConfigError

    if model_dir is not None and not Path(model_dir).is_dir():
        raise ConfigError(f"--gate-model {model_dir} is not a folder; train one with `nexus gate train --out {model_dir}`")
    own = settings.cache_dir / "gate" / "demo"
    for candidate in (model_dir, settings.gate.model, settings.default_gate_dir(), own):
        if candidate is not None and Path(candidate).is_dir():
            return load_gate(slb, registry, Path(candidate), k=settings.top_k, gate_settings=settings.gate)
    if not train:
        log.warning("no trained gate found: deciding on raw SLB scores (uncalibrated); train one with "
                    "`nexus gate train` or run `nexus demo --train-gate`")
        return ScoreGate(slb, k=settings.top_k)
    return _train_demo_gate(slb, registry, settings, own, budget_s, step, config)


def _train_demo_gate(slb: Any, registry: Any, settings: Any, out: Path, budget_s: float, step: Callable[[str], None],
                     config: Any = None) -> Any:
    """First-use training: self-supervised on the demo registry's own tools, plus BFCL's labelled turns
    (irrelevance as no-tool turns) when the data folder exists — the demo's tools are none of BFCL's, so those
    teach the general skill and calibrate it on held-out BFCL tools."""
    from dataclasses import replace

    from nexus.datasets import LabelledTurn
    from nexus.gate.training import TrainConfig, train_gate
    from nexus.registry import Registry
    from nexus.router import ScoreGate, load_gate

    train_registry, train_slb, turns = registry, slb, []
    bfcl = settings.data_dir / "bfcl"
    if bfcl.is_dir():
        from nexus.datasets.bfcl import bfcl_training_pool
        from nexus.registry.tool import check_tool
        from nexus.slb import SemanticLookasideBuffer

        step("first run: building the gate's training data from BFCL")
        tools, rows, _ = bfcl_training_pool(bfcl, [])
        train_registry = Registry()
        for source in registry.sources():
            train_registry.set_source(source, registry.source_tools(source))
        train_registry.set_source("bfcl", [check_tool(t, "bfcl", t["name"]) for t in tools])
        names = {tool.name: key for key, tool in train_registry.items() if tool.origin == "bfcl"}
        train_slb = SemanticLookasideBuffer(slb.embedder, slb.weights)
        train_slb.open(settings.cache_dir / "demo" / "gate-train-slb.idx", train_registry)
        turns = [LabelledTurn(str(r["id"]), r["query"], (names.get(r["tool"], r["tool"]),) if r["tool"] else ()) for r in rows]

    def progress(stage: str, done: int, total: int, loss: float) -> None:
        step(f"first run: training the gate ({stage} {done}/{total}, at most {budget_s:.0f} s)")

    config = replace(config or TrainConfig(k=settings.top_k), time_budget_s=budget_s)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(settings.gate.training_threads())
    try:
        train_gate(train_registry, train_slb, turns, True, config, out, progress=progress)
    except Exception as exc:  # noqa: BLE001 - the demo goes on without a gate, and says why
        log.warning("gate training failed (%s); deciding on raw SLB scores", exc)
        return ScoreGate(slb, k=settings.top_k)
    finally:
        torch.set_num_threads(threads)
    return load_gate(slb, registry, out, k=settings.top_k, gate_settings=settings.gate)


def _short(text: Any, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(turns: Sequence[DemoTurn], n_tools: int, model: str) -> Table:
    table = Table(title=f"Nexus demo — {n_tools} tools, LLM {model}", show_lines=True)
    for column, style in (("#", "dim"), ("request", ""), ("decision", "bold"), ("p(gate)", ""), ("call", "cyan"),
                          ("result", "green"), ("ctx tok", ""), ("saved", ""), ("TTFAT ms", "bold")):
        table.add_column(column, style=style or None, overflow="fold")
    for number, turn in enumerate(turns, 1):
        routed, call = turn.routed, turn.routed.call
        decision = routed.decision.action.value + ("→fallback" if call.path.value != routed.decision.action.value else "")
        p_gate = routed.decision.p_no_tool if routed.decision.action.value == "no_tool" else routed.decision.p_top1
        if call.tool:
            what = f"{call.tool}({_short(json.dumps(call.arguments, ensure_ascii=False), 70)})"
        else:
            what = "(answer)"
        outcome = turn.result if turn.result is not None else (call.answer if call.answer is not None else turn.error)
        style = "" if turn.error is None else "[red]"
        ttfat = routed.timings.ttfat_ms
        table.add_row(str(number), _short(turn.request, 60), decision, f"{p_gate:.2f}", what,
                      style + _short(outcome, 90), str(routed.context_tokens), str(routed.tokens_saved),
                      f"{ttfat:.0f}" if ttfat is not None else f"({routed.timings.total_ms:.0f})")
    return table


def demo(
    workspace: Optional[Path] = typer.Option(None, help="folder the demo servers work in (default: CACHE_DIR/workspace)"),
    scale: bool = typer.Option(True, "--scale/--no-scale", help="also ingest the public MCP catalogues when the data folder exists"),
    request: list[str] = typer.Option([], "--request", "-r", help="your own request(s) instead of the built-in ones"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
    train_gate: bool = typer.Option(True, "--train-gate/--no-train-gate",
                                    help="train a gate on first use if none exists (--no-train-gate: decide on raw SLB scores)"),
    gate_budget: float = typer.Option(540.0, help="seconds the first-use gate training steps may take"),
) -> None:
    """Route natural requests over real MCP servers with the packaged models, call the tools, show the figures."""
    import anyio

    from nexus.cli.latency import quiet_threads

    quiet_threads()
    import bm25s  # noqa: F401 - imported first: it sets its own logger to DEBUG on import

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # else every index build is logged
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from nexus.config import Settings
    from nexus.errors import NexusError
    from nexus.llm import make_backend
    from nexus.registry.servers import demo_servers_config, parse_servers_config
    from nexus.slb import HybridWeights, SemanticLookasideBuffer, SentenceTransformerEmbedder

    settings = Settings()
    out, err = Console(width=None if sys.stdout.isatty() else 180), Console(stderr=True)
    workspace = (workspace or settings.cache_dir / "workspace").resolve()
    try:
        servers = parse_servers_config(demo_servers_config(settings.servers_dir, workspace), str(settings.servers_dir))
    except NexusError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    (workspace / "notes.txt").write_text("Demo notes: Alice works at Acme.\n", encoding="utf-8")
    fill = {"repo": str(workspace / "repo"), "workspace": str(workspace)}
    requests = list(request) or [text.format(**fill) for need, text in DEMO_REQUESTS if not need or need in servers]
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task("loading the LLM", total=None)

        def step(what: str) -> None:
            progress.update(task, description=what)

        try:
            backend = make_backend(settings)
            step("loading the embedder")
            embedder = SentenceTransformerEmbedder(settings.embedder)

            def slb_factory(registry: Any) -> Any:
                slb = SemanticLookasideBuffer(embedder, HybridWeights(settings.lexical_weight, settings.name_bonus))
                slb.open(settings.cache_dir / "demo" / "slb.idx", registry)
                return slb

            def extra(live_names: set[str]) -> list:
                return scale_registry_tools(settings.data_dir, live_names) if scale and settings.data_dir.exists() else []

            turns, n_tools, failed = anyio.run(lambda: run_demo(
                servers, requests, backend=backend, slb_factory=slb_factory, extra_sources=extra, step=step,
                gate_factory=lambda slb, reg: demo_gate(slb, reg, settings, gate_model, train_gate, gate_budget, step)))
        except NexusError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
    for name, why in failed.items():
        err.print(f"[yellow]server {name} did not start:[/yellow] {why}")
    out.print(render(turns, n_tools, backend.model_id))
    ttfats = sorted(t.routed.timings.ttfat_ms for t in turns if t.routed.timings.ttfat_ms is not None)
    saved = [t.routed.tokens_saved for t in turns if t.routed.call.tool]
    if ttfats:
        out.print(f"TTFAT median {ttfats[len(ttfats) // 2]:.0f} ms; main-context tokens saved per tool turn "
                  f"(vs every full schema, {turns[0].routed.full_context_tokens:,} tokens): median {sorted(saved)[len(saved) // 2]:,}"
                  if saved else "")
    backend.close()
