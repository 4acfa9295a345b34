"""`nexus bench latency`: time to first argument token, context tokens and accuracy — Nexus vs full schemas.

For every registry size N (nested subsets of the tools file: the sampled queries' gold tools first, then
seeded distractors), the same queries run through three paths on the same backend:

- `nexus`: SLB -> gate -> LLM path (routed schema or shortlist signatures), the few-shot header warm;
- `nexus_kv`: the same path with compiled schema KV blocks injected instead of prefilling the tool lines
  (`nexus.kv`; blocks compiled ahead of the timed turns, the compile time reported as `kv_compile_s`);
- `full_cold`: every full schema in the prompt, prefilled each turn behind the same warm few-shot header
  (the KV is cut back to the header before each turn, so no path gets the header for free);
- `full_warm`: every full schema as a cached prefix; only the turn is prefilled.

Every path gets the same one repair of a rejected call (the routed path then falls back to all schemas).
Per turn a row holds `ttfat_ms` (from receiving the turn to the first argument token of the attempt that
produced the returned call), `ttfat_first_ms` (of the first attempt) and `valid_ms` (to a *valid* call, repairs
and fallbacks included; null when none was valid). `full_prompt_tokens` is the prompt the full-schema path
would have had for that very turn, so `context_reduction_vs_full` is a median of per-turn ratios of real prompts.

Full-schema paths that do not fit the context report "overflow" (never truncated). Arguments are scored
with BFCL's answer semantics (each value in its allowed list; `""` allowed means it may be omitted;
strings compared case- and punctuation-insensitively). Raw rows, config and machine facts go to the run
folder; the plot is drawn from the run folder's `result.json`.

The default sample (6 queries per size, 8k context) runs in minutes on 2 cores. Larger runs:

    nexus data bfcl --src ../shared/data/bfcl --size 250 --out data250
    nexus bench latency --tools data250/tools.json --queries data250/queries.jsonl --limit 50 --json out.json
    nexus bench latency ... --n-ctx 0              # the model's whole window (32k for Gemma 3 270M)
    nexus bench latency ... --paths nexus          # only the Nexus path (e.g. to compare gates or models)
    NEXUS_LLM_MODEL=/models/Qwen2.5-14B-Instruct-Q4_K_M.gguf NEXUS_N_CTX=32768 nexus bench latency ...
    NEXUS_LLM_BACKEND=openai NEXUS_OPENAI_BASE_URL=http://127.0.0.1:8000/v1 nexus bench latency ...

Full-schema cold prefill grows with N (about a minute per turn at N=100 with a 32k window on 2 busy cores),
so raise `--limit` with `--paths nexus,full_warm` when time is short. Behind the HTTP backend the server owns
its KV cache and `reset()` cannot empty it: there `full_cold` is not cold — use `--paths nexus,full_warm`.

>>> args_match({"city": "paris", "unit": "c"}, {"city": ["Paris"], "unit": ["", "c"]})
True
>>> args_match({"city": "Paris", "extra": 1}, {"city": ["Paris"]})
False
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, Callable, Sequence

from nexus.bench.runfolder import percentile, write_jsonl
from nexus.config import Settings
from nexus.kv import detach_blocks
from nexus.llm.base import LLMBackend
from nexus.llm.calls import ToolCaller
from nexus.registry import Registry, Tool
from nexus.router import Gate, Router
from nexus.slb.index import SemanticLookasideBuffer

log = logging.getLogger(__name__)
PATHS = ("nexus", "nexus_kv", "full_cold", "full_warm")
ROUTED = ("nexus", "nexus_kv")
OVERFLOW = "overflow"
DEFAULT_SIZES = (10, 25, 50, 100, 250)
DEFAULT_LIMIT = 6


# -- BFCL answer semantics -------------------------------------------------------------------------
def _norm(text: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def value_matches(value: Any, allowed: Any) -> bool:
    """One predicted value against one allowed value (BFCL's AST checker, simplified)."""
    if isinstance(allowed, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(allowed, bool) and value == allowed
    if isinstance(allowed, (int, float)):
        return isinstance(value, (int, float)) and float(value) == float(allowed)
    if isinstance(allowed, str):
        return isinstance(value, str) and _norm(value) == _norm(allowed)
    if isinstance(allowed, list):
        return isinstance(value, list) and len(value) == len(allowed) and all(
            value_matches(v, a) for v, a in zip(value, allowed))
    if isinstance(allowed, dict):
        if isinstance(value, dict) and allowed and all(isinstance(v, list) for v in allowed.values()):
            return args_match(value, allowed)  # nested allowed-values map
        return value == allowed
    return value == allowed


def args_match(predicted: dict[str, Any] | None, allowed: dict[str, list[Any]]) -> bool:
    """Every predicted argument is known and has an allowed value; every required one is present."""
    if not isinstance(predicted, dict):
        return False
    if any(name not in allowed for name in predicted):
        return False
    for name, options in allowed.items():
        options = options if isinstance(options, list) else [options]
        if name not in predicted:
            if "" not in options:
                return False
            continue
        if not any(value_matches(predicted[name], option) for option in options if option != ""):
            return False
    return True


# -- cases -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    n_tools: int
    tools: tuple[Tool, ...]
    queries: tuple[dict[str, Any], ...]


def build_cases(tools: Sequence[Tool], queries: Sequence[dict[str, Any]], sizes: Sequence[int], limit: int,
                seed: int = 0) -> list[Case]:
    """Nested registries: the sampled queries' gold tools first, then seeded distractors, cut at each size.

    >>> ts = [Tool(f"t{i}", "", {"type": "object"}, "f") for i in range(5)]
    >>> qs = [{"id": "a", "query": "q", "tool": "t3", "arguments": {}}]
    >>> [(c.n_tools, c.tools[0].name, len(c.queries)) for c in build_cases(ts, qs, [2, 5, 9], limit=4)]
    [(2, 't3', 1), (5, 't3', 1)]
    """
    by_name = {tool.name: tool for tool in tools}
    usable = [q for q in queries if q.get("tool") and q["tool"] in by_name]
    rng = random.Random(seed)
    rng.shuffle(usable)
    picked: list[dict[str, Any]] = []
    golds: list[str] = []
    for q in usable:  # distinct gold tools, so a small sample still spans many tools
        if q["tool"] not in golds:
            picked.append(q)
            golds.append(q["tool"])
        if len(picked) >= limit:
            break
    others = [t.name for t in tools if t.name not in set(golds)]
    rng.shuffle(others)
    order = golds + others
    cases, seen = [], set()
    for size in sizes:
        n = min(size, len(order))
        if n in seen:
            log.warning("size %d: the tools file has only %d tools; skipped", size, len(order))
            continue
        seen.add(n)
        names = set(order[:n])
        cases.append(Case(n, tuple(by_name[name] for name in order[:n]), tuple(q for q in picked if q["tool"] in names)))
    return cases


def pooled_cases(tools: Sequence[Tool], queries: Sequence[dict[str, Any]], sizes: Sequence[int], limit: int,
                 seed: int = 0, max_draws: int = 10) -> list[Case]:
    """Cases with `limit` turns at every size: a size smaller than `limit` (one turn per gold tool fits only N
    turns) gets further draws with the next seeds — other registries of the same size, never a turn twice — until
    it has `limit` turns. Sizes of at least `limit` are one draw, nested as in `build_cases`.

    >>> ts = [Tool(f"t{i}", "", {"type": "object"}, "f") for i in range(12)]
    >>> qs = [{"id": f"q{i}", "query": "q", "tool": f"t{i}", "arguments": {}} for i in range(12)]
    >>> [(c.n_tools, len(c.queries)) for c in pooled_cases(ts, qs, [3, 6], limit=6)]
    [(3, 3), (3, 3), (6, 6)]
    """
    cases: list[Case] = []
    sizes_done: set[int] = set()
    for size in sizes:
        used: set[Any] = set()
        for draw in range(max_draws):
            if len(used) >= limit:
                break
            left = [q for q in queries if q.get("id") not in used]
            drawn = build_cases(tools, left, [size], limit - len(used), seed + draw)
            if not drawn or not drawn[0].queries or (draw == 0 and drawn[0].n_tools in sizes_done):
                break  # nothing left to draw, or a size capped to one already run
            cases.append(drawn[0])
            sizes_done.add(drawn[0].n_tools)
            used |= {q.get("id") for q in drawn[0].queries}
    return cases


# -- the three paths -------------------------------------------------------------------------------
def _ms(t: float | None, start: float) -> float | None:
    return (t - start) * 1000 if t is not None else None


def _row(case: Case, path: str, q: dict[str, Any], tool: str | None, arguments: Any, valid: bool, start: float,
         t_call_first_arg: float | None, t_first_arg: float | None, t_end: float, context_tokens: int, prefilled: int,
         **extra: Any) -> dict[str, Any]:
    return {"n_tools": case.n_tools, "path": path, "id": q.get("id"), "query": q["query"], "gold": q["tool"],
            "tool": tool, "arguments": arguments, "valid": valid, "tool_ok": tool == q["tool"],
            "args_ok": tool == q["tool"] and args_match(arguments, q.get("arguments") or {}),
            "ttfat_ms": _ms(t_call_first_arg, start), "ttfat_first_ms": _ms(t_first_arg, start),
            "valid_ms": _ms(t_end, start) if valid else None, "total_ms": _ms(t_end, start),
            "context_tokens": context_tokens, "prefilled_tokens": prefilled, **extra}


def full_prompt_tokens(caller: ToolCaller, turn: str, lines: Sequence[str], tool: str) -> int:
    """Tokens of the arguments prompt that shows every full schema for this turn and tool (what the routed
    arguments prompt, `context_tokens`, is compared with)."""
    return caller.backend.count_tokens(caller.prompts.arguments_prompt(caller.prompts.call_prompt(turn, lines), tool))


def run_nexus(case: Case, router: Router, path: str = "nexus") -> list[dict[str, Any]]:
    """The routed path; `nexus_kv` is the same router with compiled KV blocks attached (compiled ahead of time
    for the case's registry, as `nexus kv compile` does, so the turns measure injection, not compiling)."""
    router.backend.reset()
    router.warm()
    lines = router.caller.tool_lines([tool.name for tool in case.tools], "schema")
    rows = []
    for q in case.queries:
        start = time.perf_counter()
        routed = router.route(q["query"])
        call = routed.call
        rows.append(_row(case, path, q, call.tool, call.arguments, call.valid, start, call.t_call_first_arg,
                         call.t_first_arg, call.t_end or time.perf_counter(), routed.context_tokens, call.prefilled_tokens,
                         full_prompt_tokens=full_prompt_tokens(router.caller, q["query"], lines, call.tool or q["tool"]),
                         decision=routed.decision.action.value, path_used=call.path.value, attempts=call.attempts,
                         slb_ms=routed.timings.slb_ms, gate_ms=routed.timings.gate_ms, p_top1=routed.decision.p_top1,
                         slb_sure=routed.decision.slb_sure))
    return rows


def run_full(case: Case, caller: ToolCaller, warm: bool) -> list[dict[str, Any]]:
    """Every full schema in the prompt, in name order (neutral: the case lists gold tools first), with the same
    one repair the routed path gets. Cold cuts the KV back to the warm few-shot header before each turn (the
    routed path has that header warm too); warm keeps the whole schema prefix."""
    keys = sorted(tool.name for tool in case.tools)
    lines = caller.tool_lines(keys, "schema")
    backend = caller.backend
    header = caller.prompts.tools_prefix(())
    rows = []
    for q in case.queries:
        if not warm or not rows:
            backend.reset()
            backend.prefill(caller.prompts.tools_prefix(lines) if warm else header)
        start = time.perf_counter()
        first = caller.attempt(q["query"], keys, "schema")
        arguments, error, gen, attempts = first.arguments, first.error, first.generation, 1
        if error is not None:
            arguments, error, gen = caller.repair(q["query"], first)
            attempts = 2
        rows.append(_row(case, "full_warm" if warm else "full_cold", q, first.key, arguments, error is None, start,
                         gen.t_first_token, first.generation.t_first_token, gen.t_end, first.generation.prompt_tokens,
                         first.prefilled_tokens, attempts=attempts))
    return rows


def _compile_blocks(router: Router, registry: Registry) -> float | None:
    """Compile every tool line's block ahead of the timed turns; seconds taken (None: blocks unavailable)."""
    blocks = router.blocks
    if blocks is None:
        return None
    backend = router.backend
    start = time.perf_counter()
    prefix = backend.tokens(router.caller.prompts.tools_prefix(()))
    blocks.compiler.compile_registry(registry, backend.model.tokenize, prefix)
    return round(time.perf_counter() - start, 2)


def full_schema_tokens(case: Case, caller: ToolCaller) -> int:
    """Tokens of the longest full-schema prompt of this case, plus the room the call needs."""
    lines = caller.tool_lines([t.name for t in case.tools], "schema")
    longest = max(case.queries, key=lambda q: len(q["query"]))["query"] if case.queries else ""
    return caller.backend.count_tokens(caller.prompts.call_prompt(longest, lines)) + caller.max_arg_tokens + 48


# -- summary ---------------------------------------------------------------------------------------
def _p50(rows: list[dict[str, Any]], field: str) -> float | None:
    values = [r[field] for r in rows if r.get(field) is not None]
    return round(percentile(values, 50), 2) if values else None


def _spread(rows: list[dict[str, Any]], field: str) -> list[float] | None:
    """[p25, p75] of a field: the spread beside each p50."""
    values = [r[field] for r in rows if r.get(field) is not None]
    return [round(percentile(values, 25), 2), round(percentile(values, 75), 2)] if values else None


def _share(rows: list[dict[str, Any]], field: str) -> float | None:
    return round(sum(bool(r[field]) for r in rows) / len(rows), 4) if rows else None


def summarise(case: Case, rows: list[dict[str, Any]], needed: int, n_ctx: int,
              paths: Sequence[str] = PATHS) -> dict[str, Any]:
    """One size's figures; a path that was not run (`paths`) is null, a full path that does not fit "overflow"."""
    by_path = {path: [r for r in rows if r["path"] == path] for path in PATHS}
    overflow = needed > n_ctx

    def metric(fn: Callable[[list[dict[str, Any]]], Any]) -> dict[str, Any]:
        return {p: (OVERFLOW if overflow and p not in ROUTED else fn(by_path[p]) if p in paths else None) for p in PATHS}

    ttfat = metric(lambda rs: _p50(rs, "ttfat_ms"))
    nexus, cold = ttfat["nexus"], ttfat["full_cold"]
    speedup = OVERFLOW if cold == OVERFLOW else (round(cold / nexus, 2) if cold and nexus else None)  # null: not run
    tool_ok = [r for r in by_path["nexus"] if r["tool_ok"]]
    reductions = [1 - r["context_tokens"] / r["full_prompt_tokens"] for r in by_path["nexus"] if r.get("full_prompt_tokens")]
    return {
        "n_tools": case.n_tools,
        "ttfat_ms_p50": ttfat,
        "ttfat_ms_iqr": metric(lambda rs: _spread(rs, "ttfat_ms")),
        "ttfat_first_ms_p50": metric(lambda rs: _p50(rs, "ttfat_first_ms")),
        "valid_ms_p50": metric(lambda rs: _p50(rs, "valid_ms")),
        "valid_ms_iqr": metric(lambda rs: _spread(rs, "valid_ms")),
        "valid_share": metric(lambda rs: _share(rs, "valid")),
        "context_tokens": metric(lambda rs: _p50(rs, "context_tokens")),
        "tool_accuracy": metric(lambda rs: _share(rs, "tool_ok")),
        "arg_accuracy": metric(lambda rs: _share(rs, "args_ok")),
        "speedup_vs_full_cold": speedup,
        "n_queries": len(case.queries),
        "full_schema_tokens": needed,
        "n_ctx": n_ctx,
        "full_prompt_tokens_p50": _p50(by_path["nexus"], "full_prompt_tokens"),
        "context_reduction_vs_full": round(percentile(reductions, 50), 4) if reductions else None,
        "context_reduction_range": [round(min(reductions), 4), round(max(reductions), 4)] if reductions else None,
        "total_ms_p50": metric(lambda rs: _p50(rs, "total_ms")),
        "arg_accuracy_given_tool": {"nexus": _share(tool_ok, "args_ok")},
        "decisions": dict(Counter(r["decision"] for r in by_path["nexus"])),
        "slb_sure_routes": sum(bool(r.get("slb_sure")) for r in by_path["nexus"]),  # ROUTEs the cross-encoder skipped
        # nexus_kv must make the calls nexus makes: the share of turns with the same tool and arguments
        "kv_same_calls": _same_calls(by_path["nexus"], by_path["nexus_kv"]) if "nexus_kv" in paths else None,
    }


def _same_calls(plain: list[dict[str, Any]], kv: list[dict[str, Any]]) -> float | None:
    pairs = [(a, b) for a, b in zip(plain, kv) if a["id"] == b["id"]]
    return round(sum(a["tool"] == b["tool"] and a["arguments"] == b["arguments"] for a, b in pairs) / len(pairs), 4) \
        if pairs else None


def run_latency(cases: Sequence[Case], backend: LLMBackend, slb: SemanticLookasideBuffer,
                gate_for: Callable[[SemanticLookasideBuffer, Registry], Gate], run_dir: Path,
                max_arg_tokens: int = 256, progress: Callable[[str, int, int], None] | None = None,
                paths: Sequence[str] = PATHS, k: int = 10, settings: Settings | None = None) -> dict[str, Any]:
    """Run every case through the paths (default all four); write rows.jsonl and result.json into `run_dir`.
    `k`: the SLB candidates the gate sees (NEXUS_GATE_K); `settings.kv` configures the `nexus_kv` path (its blocks
    go to `run_dir/kv`), and `nexus` runs with blocks off."""
    settings = settings or Settings()
    plain = settings.model_copy(update={"kv": settings.kv.model_copy(update={"blocks": "off"})})
    with_kv = settings.model_copy(update={"kv": settings.kv.model_copy(update={"blocks": "on", "dir": run_dir / "kv"})})
    unknown = set(paths) - set(PATHS)
    if unknown or "nexus" not in paths:
        raise ValueError(f"paths must include 'nexus' and name only {', '.join(PATHS)}; got {', '.join(paths)}")
    results, all_rows = [], []
    total = sum(len(c.queries) * len(paths) for c in cases)
    done = 0

    def tick(case: Case, path: str) -> None:
        nonlocal done
        done += len(case.queries)
        if progress:
            progress(f"N={case.n_tools} {path}", done, total)

    def run_case(case: Case) -> tuple[list[dict[str, Any]], int]:
        """Every path on one registry; returns the rows and the tokens every full schema needs."""
        registry = Registry()
        registry.set_source("bench", case.tools)
        slb.sync(registry)
        gate = gate_for(slb, registry)
        router = Router(registry, slb, gate, backend, k=k, max_arg_tokens=max_arg_tokens, settings=plain)
        needed = full_schema_tokens(case, router.caller)
        slb.forget_queries()  # each routed path embeds its turns itself: no path reuses another's embeddings
        rows = run_nexus(case, router)
        tick(case, "nexus")
        if "nexus_kv" in paths:
            slb.forget_queries()
            kv_router = Router(registry, slb, gate, backend, k=k, max_arg_tokens=max_arg_tokens, settings=with_kv)
            compile_s = _compile_blocks(kv_router, registry)
            rows += [dict(r, kv_compile_s=compile_s) for r in run_nexus(case, kv_router, "nexus_kv")]
            detach_blocks(backend)
            tick(case, "nexus_kv")
        for name, warm in (("full_cold", False), ("full_warm", True)):
            if name in paths:
                if needed <= backend.n_ctx:
                    rows += run_full(case, router.caller, warm)
                tick(case, name)
        backend.reset()
        return rows, needed

    for n_tools, draws in groupby(cases, key=lambda c: c.n_tools):  # a size's draws are pooled (`pooled_cases`)
        pooled, queries, needed = [], [], 0
        for draw, case in enumerate(draws):
            rows, case_needed = run_case(case)
            all_rows += [dict(r, draw=draw) for r in rows]
            pooled += rows
            queries += case.queries
            needed = max(needed, case_needed)
        summary = summarise(Case(n_tools, case.tools, tuple(queries)), pooled, needed, backend.n_ctx, paths)
        log.info("latency N=%d: %s", n_tools, summary)
        results.append(summary)
        write_jsonl(run_dir / "rows.jsonl", all_rows)  # after every size, so a long run leaves partial results
    result = {"sizes": results}
    (run_dir / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def plot_latency(run_dir: Path) -> Path:
    """TTFAT p50 and context tokens vs registry size, from `run_dir/result.json`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))["sizes"]
    fig, (ax_t, ax_c) = plt.subplots(1, 2, figsize=(11, 4.2))
    for path, style in zip(PATHS, ("o-", "D-", "s--", "^:")):
        points = [(s["n_tools"], s["ttfat_ms_p50"][path]) for s in sizes
                  if isinstance(s["ttfat_ms_p50"][path], (int, float))]
        if points:
            ax_t.plot(*zip(*points), style, label=path)
        points = [(s["n_tools"], s["context_tokens"][path]) for s in sizes
                  if isinstance(s["context_tokens"][path], (int, float))]
        if points:
            ax_c.plot(*zip(*points), style, label=path)
    needed = [(s["n_tools"], s["full_schema_tokens"]) for s in sizes]
    ax_c.plot(*zip(*needed), "x", color="grey", label="full schemas needed")
    overflow = [s["n_tools"] for s in sizes if s["ttfat_ms_p50"]["full_cold"] == OVERFLOW]
    for ax in (ax_t, ax_c):
        if overflow:
            ax.axvline(min(overflow), color="red", alpha=0.4, linestyle="--", label=f"overflow (n_ctx={sizes[0]['n_ctx']})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("registry size (tools)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    ax_t.set_ylabel("TTFAT p50 (ms)")
    ax_t.set_title("Time to first argument token")
    ax_c.set_ylabel("main-context tokens per turn")
    ax_c.set_title("Context tokens")
    fig.tight_layout()
    path = run_dir / "latency_vs_size.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
