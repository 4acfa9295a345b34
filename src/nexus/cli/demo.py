"""`nexus demo`: the main job, offline on embedded defaults.

Starts the demo MCP servers installed in `.servers` (stdio), ingests their tools — with `--scale`, and when the
evaluation data folder exists, also ~600 real MCP tools from public catalogues that no server here serves — routes a set of
natural requests through SLB -> gate -> LLM (the packaged Gemma 3 270M writes the arguments under a
grammar), calls the chosen tool through MCP and prints one table row per turn.

The orchestration lives in `nexus.demo` (over the `nexus.Nexus` facade); this module parses and renders.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from nexus.demo import DemoTurn


def _short(text: Any, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(turns: Sequence["DemoTurn"], n_tools: int, model: str) -> Table:
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


class StepProgress:
    """The demo's preparation and turns, visible: a bar on a terminal, plain timestamped lines when stderr is piped
    to a file (a line per stage, and for counted stages — "12/400" in the text — at most one every 10 s). A stage
    whose text carries "done/total" fills the bar."""

    _COUNT = re.compile(r"(\d+)/(\d+)")

    def __init__(self, console: Console, plain_every_s: float = 10.0):
        self.console, self.plain_every_s = console, plain_every_s
        self.start = time.perf_counter()
        self._bar = self._task = None
        self._last: tuple[str, float] = ("", -1e9)
        if console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=True)
            self._task = self._bar.add_task("starting", total=None)

    def __enter__(self) -> "StepProgress":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, what: str) -> None:
        count = self._COUNT.search(what)
        done, total = (int(count.group(1)), int(count.group(2))) if count else (None, None)
        if self._bar is not None:
            self._bar.update(self._task, description=what, completed=done or 0, total=total)
            return
        now = time.perf_counter()
        stage = self._COUNT.sub("", what)
        if stage == self._last[0] and now - self._last[1] < self.plain_every_s and done != total:
            return  # the same counted stage, moments later: keep the log short
        self._last = (stage, now)
        self.console.print(f"[{now - self.start:6.1f}s] {what}", highlight=False, soft_wrap=True)


def write_rows(turns: Sequence["DemoTurn"], out: Path) -> None:
    """One JSON object per turn and line (`nexus.demo.turn_row`); "-" writes to stdout."""
    from nexus.demo import turn_row

    lines = "".join(json.dumps(turn_row(t), ensure_ascii=False, default=str) + "\n" for t in turns)
    if str(out) == "-":
        sys.stdout.write(lines)
    else:
        out.write_text(lines, encoding="utf-8")


def quiet_libraries() -> None:
    """The demo's libraries at the log levels a user wants (and torch on the threads the gate is measured with)."""
    from nexus.cli.latency import quiet_threads

    quiet_threads()
    import bm25s  # noqa: F401 - imported first: it sets its own logger to DEBUG on import

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # else every index build is logged


def demo(
    workspace: Optional[Path] = typer.Option(None, help="folder the demo servers work in (default: CACHE_DIR/workspace)"),
    reset: bool = typer.Option(False, "--reset", help="start from the seeded data (a notes table, a knowledge graph with "
                               "Alice and Acme, a repository with three commits) instead of what earlier runs left"),
    scale: bool = typer.Option(False, "--scale/--no-scale", help="also ingest ~600 tools of public MCP catalogues (when "
                               "the data folder exists) that no demo server serves: routing at scale, with tools that "
                               "cannot be called"),
    request: list[str] = typer.Option([], "--request", "-r", help="your own request(s) instead of the built-in ones"),
    gate_model: Optional[Path] = typer.Option(None, help="trained gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
    train_gate: bool = typer.Option(True, "--train-gate/--no-train-gate",
                                    help="train a gate on first use if none exists (--no-train-gate: decide on raw SLB scores)"),
    gate_budget: float = typer.Option(540.0, help="seconds the first-use gate training steps may take"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write one JSON object per turn to this file "
                                            "(request, decision, p, tool, arguments, result, error; '-': stdout)"),
) -> None:
    """Route natural requests over real MCP servers with the packaged models, call the tools, show the figures."""
    quiet_libraries()
    from nexus.config import Settings
    from nexus.demo import prepare_workspace, run_requests
    from nexus.errors import NexusError

    settings = Settings()
    out, err = Console(width=None if sys.stdout.isatty() else 180), Console(stderr=True)
    blank = [i + 1 for i, text in enumerate(request) if not text.strip()]
    if blank:  # refused before anything starts: a blank request asks for nothing
        err.print(f"[red]error:[/red] request {', '.join(map(str, blank))} of -r is empty; give each -r a request")
        raise typer.Exit(2)
    own = (settings.cache_dir / "workspace").resolve()
    try:
        workspace = prepare_workspace(workspace or own, reset=reset, owned=(workspace or own).resolve() == own)
    except (NexusError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    with StepProgress(err) as step:
        try:
            turns, n_tools, failed, model_id = run_requests(settings, workspace, request, step, scale=scale,
                                                            gate_model=gate_model, train_gate=train_gate,
                                                            gate_budget=gate_budget)
        except NexusError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from None
    for name, why in failed.items():
        err.print(f"[yellow]server {name} did not start:[/yellow] {why}")
    if json_out is not None:
        write_rows(turns, json_out)
    if str(json_out) != "-":
        out.print(render(turns, n_tools, model_id))
    ttfats = sorted(t.routed.timings.ttfat_ms for t in turns if t.routed.timings.ttfat_ms is not None)
    saved = [t.routed.tokens_saved for t in turns if t.routed.call.tool]
    if ttfats and str(json_out) != "-":
        out.print(f"TTFAT median {ttfats[len(ttfats) // 2]:.0f} ms; main-context tokens saved per tool turn "
                  f"(vs every full schema, {turns[0].routed.full_context_tokens:,} tokens): median {sorted(saved)[len(saved) // 2]:,}"
                  if saved else "")
