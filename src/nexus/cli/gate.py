"""`nexus gate`: train, evaluate and try the boundary gate (thin: parse, build settings, call the library)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from nexus.registry import load_registry

app = typer.Typer(help="The calibrated cross-encoder boundary gate.", no_args_is_help=True)
err = Console(stderr=True)


def _nexus(registry, settings, cache: bool = True, model: Path | None = None, embedder=None):
    """The facade over `registry` (the SLB kept in the cache when `cache`), deciding with the trained gate in
    `model` / NEXUS_GATE_MODEL / the cache's default — an error if there is none."""
    from nexus.nexus import Nexus

    index = settings.cache_dir / "gate" / f"slb-{registry.content_hash()[:16]}.idx" if cache else None
    return Nexus.from_settings(settings.with_gate_model(model), registry=registry, index_path=index, embedder=embedder,
                               require_gate=True)


def _slb(registry, settings, cache: bool = True, embedder=None):
    """The SLB over `registry`, synced; `embedder` reuses an already loaded one (several registries, one model)."""
    return _nexus(registry, settings, cache, embedder=embedder).sync().slb


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


@app.command("train")
def train(
    tools: List[Path] = typer.Option([], help="training registry: tools file(s) (MCP, OpenAI or BFCL form)"),
    queries: List[Path] = typer.Option([], help="labelled turns JSONL ({id, query, tool}) for --tools; tool null = no tool"),
    data: List[Path] = typer.Option([], help="dataset folder(s) in the generic form (tools.json + queries.jsonl), or a "
                                    "folder of them (e.g. ../shared/data/train); each folder is its own source"),
    exclude: List[Path] = typer.Option([], help="tools file(s) of evaluation registries: their tools (name, SGD family, "
                                       "description) and the turns needing them are left out of --data"),
    skip_source: List[str] = typer.Option([], help="dataset folder name(s) to leave out (leave-one-source-out)"),
    max_per_source: Optional[int] = typer.Option(None, help="cap on each source's labelled (and no-tool) turns"),
    max_calibration: Optional[int] = typer.Option(None, help="cap on calibration turns per class (scoring time)"),
    self_supervised: bool = typer.Option(True, "--self/--no-self", help="also train on pseudo-queries from the tools' docs"),
    base: Optional[Path] = typer.Option(None, help="HF cross-encoder/encoder folder to start from (default: packaged MiniLM)"),
    scorer: Optional[str] = typer.Option(None, help="segment-cosine (encoder folders) | cross-encoder (HF reranker folders); default NEXUS_GATE_SCORER"),
    joint_from: Optional[int] = typer.Option(None, help="split-cosine: first of the layers read jointly (default: "
                                             "the base's, else 4)"),
    out: Optional[Path] = typer.Option(None, help="model folder (default: <cache_dir>/gate/default)"),
    steps: Optional[int] = typer.Option(None, help="cap on optimiser steps (0: calibrate a ready cross-encoder as it is)"),
    epochs: Optional[float] = typer.Option(None, help="passes over the training groups (before the cap)"),
    seed: int = typer.Option(0, help="random seed"),
    time_budget: Optional[float] = typer.Option(None, help="stop training after this many seconds"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the training report here"),
) -> None:
    """Fine-tune and calibrate the cross-encoder; saves a versioned model folder."""
    from dataclasses import asdict, replace

    from nexus.config import Settings
    from nexus.gate.training import TrainConfig, train_gate

    settings = Settings()
    gs = settings.gate
    _threads(gs.training_threads())
    registry, turns = _training_data(tools, queries, data, exclude, skip_source, max_per_source, seed)
    gs = gs.model_copy(update={k: v for k, v in (("base_model", base), ("scorer", scorer)) if v is not None})
    config = TrainConfig.from_settings(gs, seed=seed, time_budget_s=time_budget, max_calibration_turns=max_calibration)
    if steps is not None:
        config = replace(config, max_steps=steps)
    if epochs is not None:
        config = replace(config, epochs=epochs)
    if joint_from is not None:
        config = replace(config, joint_from=joint_from)
    err.print(f"[bold]gate train[/] {len(registry)} tools, {len(turns)} labelled turns, self-supervision {'on' if self_supervised else 'off'}")
    slb = _slb(registry, settings)
    target = out or settings.gate.model or settings.default_gate_dir()  # never into the shipped models/gate
    model, report = train_gate(registry, slb, turns, self_supervised, config, target, progress=_progress_bar())
    text = json.dumps({"model": str(target), **asdict(report)}, indent=2, default=str)
    if json_out:
        json_out.write_text(text, encoding="utf-8")
    print(text)


def _training_data(tools: List[Path], queries: List[Path], data: List[Path], exclude: List[Path], skip_source: List[str],
                   max_per_source: Optional[int], seed: int):
    """The training registry and labelled turns from --tools/--queries and --data folders (what `train` and
    `calibrate` both read, so a saved gate's calibration split can be rebuilt from the same arguments)."""
    from dataclasses import replace

    from nexus.datasets import read_datasets
    from nexus.registry import Registry, load_tools_file

    if not tools and not data:
        raise typer.BadParameter("give --tools (with --queries) and/or --data")
    registry = load_registry(tools) if tools else Registry()
    turns = _labelled(queries, registry)
    if data:
        excluded = [t for path in exclude for t in load_tools_file(path)]
        extra, more, stats = read_datasets(data, excluded, max_per_source, skip_source, seed)
        for source in extra.sources():
            if source in registry.sources():
                raise typer.BadParameter(f"dataset folder {source!r} clashes with a --tools source of the same name")
            registry.set_source(source, extra.source_tools(source))
        names = registry.name_index()
        keyed = {(t.origin, t.name): k for k, t in registry.items()}
        turns += [replace(t, tools=tuple(keyed.get((t.source, extra.get(k).name), names.get(k, k)) for k in t.tools)) for t in more]
        err.print(f"[bold]datasets[/] {json.dumps(stats)}")
    return registry, turns


def _labelled(paths: List[Path], registry):
    from nexus.datasets import LabelledTurn, read_turns

    mapping = registry.name_index()
    return [LabelledTurn(t.id, t.query, tuple(mapping.get(n, n) for n in t.tools), t.history)
            for path in paths for t in read_turns(path)]


@app.command("calibrate")
def calibrate(
    model: Path = typer.Option(..., help="saved gate folder whose calibration is refitted in place"),
    tools: List[Path] = typer.Option([], help="the registry it was trained on (its calibration split is rebuilt)"),
    queries: List[Path] = typer.Option([], help="the labelled turns it was trained with"),
    data: List[Path] = typer.Option([], help="the dataset folder(s) it was trained with (as for `gate train`)"),
    exclude: List[Path] = typer.Option([], help="the --exclude tools file(s) it was trained with"),
    skip_source: List[str] = typer.Option([], help="the --skip-source names it was trained with"),
    max_per_source: Optional[int] = typer.Option(None, help="the --max-per-source it was trained with"),
    seed: int = typer.Option(0, help="the --seed it was trained with"),
    max_calibration: Optional[int] = typer.Option(None, help="replace the saved cap on calibration turns per class "
                                                  "(0: no cap); default: the cap it was trained with"),
    dev: List[Path] = typer.Option([], help="dev registry folder(s) (tools.json + queries.jsonl, e.g. `nexus data bfcl "
                                   "--seed 1 --exclude T`): scored whole and fitted with the calibration split; "
                                   "never report figures on them afterwards (benchmarks refuse them)"),
    unranked_source: Optional[List[str]] = typer.Option(None, help="source(s) whose calibration turns count "
                                                        "for NO_TOOL only, not for which tool is right (default: as saved)"),
) -> None:
    """Refit calibration and thresholds of a saved model on its own held-out calibration split (give the data
    arguments it was trained with; the split is rebuilt from them and the saved config), plus any --dev registries."""
    from nexus.config import Settings
    from nexus.gate.training import DevSet, recalibrate

    settings = Settings()
    gs = settings.gate
    _threads(gs.threads)
    registry, turns = _training_data(tools, queries, data, exclude, skip_source, max_per_source, seed)
    cap = {} if max_calibration is None else {"max_calibration_turns": max_calibration or None}
    slb = _slb(registry, settings)
    dev_sets = []
    for folder in dev:
        dev_registry = load_registry([folder / "tools.json"])
        dev_sets.append(DevSet(folder.name, _slb(dev_registry, settings, embedder=slb.embedder), dev_registry,
                               _labelled([folder / "queries.jsonl"], dev_registry)))
    refitted = recalibrate(model, registry, slb, turns, dev=dev_sets, rank=gs.rank,
                           unranked_sources=unranked_source, **cap)
    print(json.dumps({"model": str(model), "calibration": refitted.calibration.report}, indent=2, default=str))


def _progress_bar():
    """A rich progress bar on a TTY; plain progress lines on stderr otherwise (every 5 % and at the end)."""
    if not sys.stderr.isatty():
        import time

        start, last = time.perf_counter(), {}

        def lines(stage: str, done: int, total: int, loss: float) -> None:
            step = max(1, total // 20)
            if done == total or done - last.get(stage, 0) >= step:
                last[stage] = done
                print(f"{stage} {done}/{total} loss {loss:.3f} {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)

        return lines
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]:.3f}"),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
    tasks: dict[str, int] = {}

    def update(stage: str, done: int, total: int, loss: float) -> None:
        if stage not in tasks:
            if not tasks:
                bar.start()
            tasks[stage] = bar.add_task(stage, total=total, loss=float("nan"))
        bar.update(tasks[stage], completed=done, total=total, loss=loss)
        if stage == "calibrate" and done >= total:
            bar.stop()

    return update


@app.command("export")
def export(
    model: Path = typer.Option(..., help="a gate folder saved by `nexus gate train`"),
    out: Path = typer.Option(..., help="where the compact copy goes (e.g. models/gate)"),
) -> None:
    """Write a compact copy of a gate (changed tensors in fp16, ~22 MB; calibration and fingerprint kept)."""
    from nexus.gate.model import export_compact

    exported = export_compact(model, out)
    print(json.dumps({"model": str(out), "weights_sha256": exported.header.weights_sha256}, indent=2))


@app.command("pool")
def pool(
    src: Optional[Path] = typer.Option(None, help="BFCL folder (default: <data_dir>/bfcl)"),
    exclude: List[Path] = typer.Option([], help="tools file(s) of test registries: no tool of theirs is kept"),
    out: Path = typer.Option(..., help="output folder for tools.json and queries.jsonl"),
) -> None:
    """Write a tool-disjoint BFCL training pool (irrelevance as no-tool turns; live_irrelevance never used)."""
    from nexus.datasets.bfcl import write_dataset
    from nexus.config import Settings
    from nexus.datasets.bfcl import bfcl_training_pool
    from nexus.registry import load_tools_file

    source = src or Settings().data_dir / "bfcl"
    excluded = [t for path in exclude for t in load_tools_file(path)]
    tools, turns, stats = bfcl_training_pool(source, excluded)
    write_dataset(out, tools, turns)
    err.print(stats)


@app.command("eval")
def evaluate(
    tools: Path = typer.Option(..., help="test registry tools file"),
    queries: Path = typer.Option(..., help="queries JSONL ({id, query, tool}); tool null = no tool"),
    model: Optional[Path] = typer.Option(None, help="gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
    multi_src: Optional[Path] = typer.Option(None, "--multi", help="BFCL folder: also report complete-set recall on parallel_multiple"),
    multi_split: str = typer.Option("test", help="half of the parallel_multiple turns to measure: test | dev (to choose rules on) | all"),
    allow_overlap: bool = typer.Option(False, "--allow-overlap", help="measure even if the gate trained on tools of this registry (figures not tool-disjoint)"),
    run_dir: Optional[Path] = typer.Option(None, help="where rows, plots and the result go"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="write the result JSON here"),
) -> None:
    """Measure the gate on a registry and labelled queries (the figures `nexus bench routing --gate` adds)."""
    from nexus.datasets import read_query_records as read_queries
    from nexus.config import Settings
    from nexus.datasets.bfcl import bfcl_multi_call
    from nexus.gate.bench import check_disjoint, disjoint_multi_call, gate_metrics, multi_call_metrics, split_half
    from nexus.registry import Registry

    settings = Settings()
    _threads(settings.gate.threads)
    registry = load_registry([tools])
    view = _nexus(registry, settings, cache=False, model=model).sync()
    shared = check_disjoint(view.gate.model, registry, allow_overlap)
    folder = run_dir or Path("runs") / f"gate-{tools.parent.name}"
    result = {"n_tools": len(registry), "overlap_with_training": len(shared),
              **gate_metrics(view.slb, registry, read_queries(queries), view.gate, folder)}
    if multi_src:
        mtools, mturns = bfcl_multi_call(multi_src)
        mtools, mturns, dropped = disjoint_multi_call(mtools, mturns, (view.gate.model.header.training or {}).get("tools_fingerprint"))
        mturns = split_half(mturns, multi_split)
        result.update({**dropped, "multi_split": multi_split})
        mreg = Registry()
        mreg.set_source("parallel_multiple", mtools)
        mview = _nexus(mreg, settings, cache=False, model=model, embedder=view.slb.embedder).sync()
        result.update({"multi_n_tools": len(mreg), **multi_call_metrics(mview.gate, mturns)})
    text = json.dumps(result, indent=2)
    (Path(folder) / "result.json").write_text(text, encoding="utf-8")
    if json_out:
        json_out.write_text(text, encoding="utf-8")
    print(text)


@app.command("decide")
def decide(
    turn: str = typer.Argument(..., help="the user turn"),
    tools: List[Path] = typer.Option(..., help="registry tools file(s)"),
    history: List[str] = typer.Option([], help="earlier user turns, oldest first"),
    model: Optional[Path] = typer.Option(None, help="gate folder (default: NEXUS_GATE_MODEL or the cache's)"),
) -> None:
    """Decide one turn and print the Decision as JSON."""
    from nexus.config import Settings

    settings = Settings()
    _threads(settings.gate.threads)
    registry = load_registry(tools)
    d = _nexus(registry, settings, model=model).route([*({"role": "user", "content": h} for h in history),
                                                        {"role": "user", "content": turn}]).decision
    print(json.dumps({"action": d.action.value, "tool": d.tool, "p_top1": round(d.p_top1, 4), "p_no_tool": round(d.p_no_tool, 4),
                      "candidates": [{"key": h.key, "score": None if s != s else round(s, 3)}  # NaN: not reranked
                                     for h, s in zip(d.candidates, d.scores)],
                      "gate_ms": round(d.gate_ms, 1)}, indent=2))
