"""`nexus bench kv`: fidelity and latency of compiled schema KV blocks against a full re-prefill.

Each case is one tool-calling turn: the gold tool's full schema (the routed block), a request, and a
conversation history made of other turns. Everything is measured on the same warm context, on identical
token sequences, against the re-prefill of those tokens in one batch:

- drift sweep (layout b: history kept warm, block injected after it, so drift = history length) for
  drift in DRIFTS x repair in REPAIRS (tail re-decode depth r; "all" re-decodes the block; "policy" is the
  configured `RepairPolicy`) plus the EPIC-style alternative (the block's first r tokens re-decoded);
- layout a (block at its anchor right after the header, the history re-prefilled after it);
- shortlists (several signature blocks concatenated behind the header: every block after the first lands
  off its anchor).

The reference is what the plain path computes: the same tokens prefilled in the same units (the first tool line
alone, then the rest; `Prompt.cuts`), so a block at its anchor is exact by construction.

The distribution compared is the model's next token after the arguments cue (`...Tool: <name>\\nArguments:`;
for shortlists after `Tool:`). The noise floor is the mean KL between that re-prefill and the same tokens decoded
in other batches (one batch; the last token alone: `nexus.kv.live.noise_splits`). A drift predictor's Spearman rho is measured on repair-0 injections, chosen on the
dev half of the cases and reported on the test half.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nexus.bench.runfolder import percentile, write_jsonl
from nexus.kv.compiler import SchemaBlockCompiler
from nexus.kv.fidelity import entropy, kl_from_logits, margin, spearman, top1_agrees
from nexus.kv.injector import BlockInjector, RepairPolicy
from nexus.kv.live import noise_splits
from nexus.llm.prompts import Exchange, PromptBuilder, schema_line, signature_line
from nexus.registry import Tool

log = logging.getLogger(__name__)
DRIFTS = (0, 16, 64, 256, 512, 1024, 2048)
REPAIRS: tuple[int | str, ...] = (0, 8, 32, "all", "policy")
ALTERNATIVES = ("epic8", "epic32")
LAYOUTS = ("a", "b", "shortlist")
SHORTLIST_K = 5
# sequences of the bench context: warm history, work, injection scratch / compile work, compile prefix, pin.
# PIN shares every cell of WARM: llama.cpp's SWA cache reuses a cell held by one sequence once it is out of that
# sequence's window (even with swa_full), which would drop history positions WORK later copies from WARM.
WARM, WORK, SCRATCH, PREFIX, PIN = 0, 3, 1, 2, 4
N_SEQ = 5


@dataclass(frozen=True)
class KVCase:
    id: str
    tool: Tool
    request: str
    shortlist: tuple[Tool, ...]          # gold first, then distractors (shown best-ranked last)
    history: tuple[Exchange, ...]


def build_kv_cases(tools: Sequence[Tool], queries: Sequence[dict[str, Any]], limit: int, seed: int = 0) -> list[KVCase]:
    """One case per query with a distinct gold tool; the history is made of the other sampled queries' turns."""
    by_name = {t.name: t for t in tools}
    rng = random.Random(seed)
    usable = [q for q in queries if q.get("tool") in by_name]
    rng.shuffle(usable)
    picked, seen = [], set()
    for q in usable:
        if q["tool"] not in seen:
            picked.append(q)
            seen.add(q["tool"])
    history = [Exchange(q["query"], q["tool"], {k: (v[0] if isinstance(v, list) and v else v)
                                                for k, v in (q.get("arguments") or {}).items()}, "ok") for q in picked]
    cases = []
    for i, q in enumerate(picked[:limit]):
        others = [t for t in tools if t.name != q["tool"]]
        distractors = rng.sample(others, min(SHORTLIST_K - 1, len(others)))
        past = tuple(history[i + 1:] + history[:i])
        cases.append(KVCase(str(q.get("id", i)), by_name[q["tool"]], q["query"], (by_name[q["tool"]], *distractors), past))
    return cases


class KVBench:
    """Measurements on one llama.cpp backend (its context needs N_SEQ sequences)."""

    def __init__(self, backend: Any, compiler: SchemaBlockCompiler, policy: RepairPolicy):
        self.backend, self.ctx, self.compiler, self.policy = backend, backend.context, compiler, policy
        self.injector = BlockInjector(self.ctx, SCRATCH)
        self.prompts = PromptBuilder()
        tok = backend.model.tokenize
        self.tok = lambda text: tok(text)
        bos = [backend.model.bos] if backend.model.add_bos else []
        header = self.prompts.tools_prefix([])
        self.prefix = bos + [t for s in header.segments for t in self.tok(s)]

    # -- primitives --------------------------------------------------------------------------------
    def _start(self, n: int) -> None:
        """WORK holds the first n tokens of WARM (shared cells: free)."""
        self.ctx.seq_cp(WARM, WORK, n)

    def reprefill(self, held: int, tokens: list[int], chunks: Sequence[int] = ()) -> tuple[np.ndarray, float]:
        """The first `held` tokens of WARM, then `tokens` decoded in batches of the sizes `chunks` (one batch: [])."""
        self._start(held)
        start, pos = time.perf_counter(), 0
        for size in (chunks or [len(tokens)]):
            self.ctx.decode(tokens[pos:pos + size], WORK, held + pos)
            pos += size
        logits = np.array(self.ctx.logits(), copy=True)
        seconds = time.perf_counter() - start
        self.ctx.drop(WORK)
        return logits, seconds

    def injected(self, held: int, blocks: list[tuple[str, list[int]]], rest: list[int], plan: Callable[[int, int], tuple[int, int]]
                 ) -> tuple[np.ndarray, float, int, list[int]]:
        """Inject `blocks` (text, tokens) after the first `held` tokens of WARM, then decode `rest`. As in the live
        path (`KVBlocks.fill`), a block off its anchor that the plan re-decodes whole is prefilled with what
        follows it, in one batch."""
        self._start(held)
        start = time.perf_counter()
        recomputed, drifts, pending = 0, [], []
        for text, tokens in blocks:
            landing = len(self.ctx.tokens(WORK)) + len(pending)
            drift = landing - len(self.prefix)
            head, tail = plan(drift, len(tokens))
            if drift and head + tail >= len(tokens):
                pending += tokens
                recomputed += len(tokens)
                drifts.append(drift)
                continue
            if pending:
                self.ctx.decode(pending, WORK, len(self.ctx.tokens(WORK)))
                pending = []
            block = self.compiler.block(self.prefix, text, tokens)
            done = self.injector.inject(WORK, block, head, tail)
            recomputed += done.decoded
            drifts.append(done.drift)
        self.ctx.decode(pending + rest, WORK, len(self.ctx.tokens(WORK)))
        logits = np.array(self.ctx.logits(), copy=True)
        seconds = time.perf_counter() - start
        self.ctx.drop(WORK)
        return logits, seconds, recomputed, drifts

    def warm(self, history: list[int]) -> None:
        self.ctx.drop(WARM)
        self.ctx.drop(PIN)
        self.ctx.drop(PREFIX)  # no stale header copy owned by one sequence (its cells would be reused out of order)
        self.ctx.decode(self.prefix + history, WARM, 0, cuts=[len(self.prefix)])  # the header alone, as prefill does
        self.ctx.seq_cp(WARM, PIN)

    def noise_floor(self, held: int, tokens: list[int], reference: np.ndarray) -> float:
        return float(np.mean([kl_from_logits(reference, self.reprefill(held, tokens, chunks)[0])
                              for chunks in noise_splits(len(tokens))]))

    @staticmethod
    def _plan(repair: int | str, policy: RepairPolicy) -> Callable[[int, int], tuple[int, int]]:
        if repair == "policy":
            return policy.plan
        if repair == "all":
            return lambda drift, n: (0, n)
        if isinstance(repair, str) and repair.startswith("epic"):
            r = int(repair[4:])
            return lambda drift, n: (min(r, n), 0) if drift else (0, 0)
        return lambda drift, n: (0, min(int(repair), n)) if drift else (0, 0)

    # -- one case ----------------------------------------------------------------------------------
    def run_case(self, case: KVCase, drifts: Sequence[int], alternatives: Sequence[str] = ALTERNATIVES,
                 layouts: Sequence[str] = LAYOUTS) -> list[dict[str, Any]]:
        p = self.prompts
        history_tokens = self.tok("".join(p._history(case.history)))
        while len(history_tokens) < max(drifts):
            history_tokens = history_tokens + history_tokens
        self.warm(history_tokens[:max(drifts)])
        text = schema_line(case.tool.name, case.tool)
        block = self.tok(text)
        rest = self.tok(f"Request: {' '.join(case.request.split())}\n") + self.tok("Tool:") + self.tok(f" {case.tool.name}") \
            + self.tok("\nArguments:")
        self.compiler.block(self.prefix, text, block)
        rows = []
        a = len(self.prefix)
        for drift in (drifts if "b" in layouts else ()):
            # layout b: history warm, block injected after it
            # the plain path's units: a tool line right behind the header alone (the compiler's unit), else one batch
            ref, t_ref = self.reprefill(a + drift, block + rest, [] if drift else [len(block), len(rest)])
            floor = self.noise_floor(a + drift, block + rest, ref)
            base = {"case": case.id, "layout": "b", "drift": drift, "block_tokens": len(block), "noise_floor_kl": floor}
            probe: dict[str, np.ndarray] = {}
            for repair in (*REPAIRS, *alternatives):
                logits, seconds, recomputed, _ = self.injected(a + drift, [(text, block)], rest, self._plan(repair, self.policy))
                probe[str(repair)] = logits
                rows.append({**base, "repair": repair, "top1": top1_agrees(ref, logits), "kl": kl_from_logits(ref, logits),
                             "latency_ratio": seconds / t_ref, "seconds": seconds, "reprefill_seconds": t_ref,
                             "tokens_recomputed": recomputed})
            row0 = next(r for r in rows if r["drift"] == drift and r["repair"] == 0 and r["case"] == case.id and r["layout"] == "b")
            row0["predictors"] = predictors(drift, len(block), probe)
        # layout a: block at its anchor, the history re-prefilled after it (drift 0 for the block)
        for h in ((0, 256) if "a" in layouts else ()):
            hist = history_tokens[:h]
            ref, t_ref = self.reprefill(a, block + hist + rest, [len(block), len(hist) + len(rest)])
            floor = self.noise_floor(a, block + hist + rest, ref)
            logits, seconds, recomputed, _ = self.injected(a, [(text, block)], hist + rest, self._plan(0, self.policy))
            rows.append({"case": case.id, "layout": "a", "history": h, "drift": 0, "repair": 0, "top1": top1_agrees(ref, logits),
                         "kl": kl_from_logits(ref, logits), "noise_floor_kl": floor,
                         "latency_ratio": seconds / t_ref, "tokens_recomputed": recomputed})
        if "shortlist" not in layouts:
            return rows
        # shortlist: signature blocks concatenated at the anchor, best-ranked (gold) last
        lines = [(signature_line(t.name, t), None) for t in case.shortlist[::-1]]
        lines = [(line, self.tok(line)) for line, _ in lines]
        for line, tokens in lines:
            self.compiler.block(self.prefix, line, tokens)  # compiled before timing: the live path compiles once
        flat = [t for _, tokens in lines for t in tokens]
        rest = self.tok(f"Request: {' '.join(case.request.split())}\n") + self.tok("Tool:")
        ref, t_ref = self.reprefill(a, flat + rest, [len(lines[0][1]), len(flat) - len(lines[0][1]) + len(rest)])
        floor = self.noise_floor(a, flat + rest, ref)
        probe = {}
        for repair in (0, 8, "all", "policy", *alternatives):
            logits, seconds, recomputed, drifts_used = self.injected(a, lines, rest, self._plan(repair, self.policy))
            probe[str(repair)] = logits
            rows.append({"case": case.id, "layout": "shortlist", "drift": max(drifts_used), "repair": repair,
                         "top1": top1_agrees(ref, logits), "kl": kl_from_logits(ref, logits),
                         "noise_floor_kl": floor, "latency_ratio": seconds / t_ref,
                         "tokens_recomputed": recomputed, "block_drifts": drifts_used})
        row0 = next(r for r in rows if r["layout"] == "shortlist" and r["repair"] == 0)
        row0["predictors"] = predictors(row0["drift"], len(flat), probe)
        return rows


def predictors(drift: int, n_block: int, probe: dict[str, np.ndarray]) -> dict[str, float]:
    """Reference-free predictors of an unrepaired injection's KL, from what the live path can see: the drift,
    the injected next-token distribution (margin, entropy), and the KL between the unrepaired injection and a
    cheaply repaired one (r = 8 at the seam, or EPIC's first 8 tokens) — no full re-prefill needed."""
    out = {"drift": float(drift), "drift_x_len": float(drift) * n_block, "neg_margin": -margin(probe["0"]),
           "entropy": entropy(probe["0"])}
    for name, key in (("self_kl_r8", "8"), ("self_kl_epic8", "epic8")):
        if key in probe:
            out[name] = kl_from_logits(probe[key], probe["0"])
    return out


# -- summary ---------------------------------------------------------------------------------------
def _agg(rows: list[dict[str, Any]]) -> dict[str, Any]:
    kls = [r["kl"] for r in rows]
    return {"n": len(rows), "top1_agreement": round(float(np.mean([r["top1"] for r in rows])), 4),
            "kl_mean": float(np.mean(kls)), "kl_p95": percentile(kls, 95),
            "noise_floor_kl": float(np.mean([r["noise_floor_kl"] for r in rows])),
            "latency_ratio_vs_reprefill": round(percentile([r["latency_ratio"] for r in rows], 50), 3),
            "tokens_recomputed": float(np.mean([r["tokens_recomputed"] for r in rows]))}


def ok(summary: dict[str, Any]) -> bool:
    """The issue's target for a repaired injection: top-1 >= 0.99 and mean KL <= 2x the noise floor."""
    return summary["top1_agreement"] >= 0.99 and summary["kl_mean"] <= 2 * summary["noise_floor_kl"]


def summarise(rows: list[dict[str, Any]], dev_cases: set[str]) -> dict[str, Any]:
    b = [r for r in rows if r["layout"] == "b"]
    alternatives = list(dict.fromkeys(r["repair"] for r in rows if r["repair"] not in REPAIRS))
    table = []
    for drift in sorted({r["drift"] for r in b}):
        for repair in (*REPAIRS, *dict.fromkeys(r["repair"] for r in b if r["repair"] not in REPAIRS)):
            group = [r for r in b if r["drift"] == drift and r["repair"] == repair]
            if group:
                table.append({"drift": drift, "repair": repair, **_agg(group)})
    # the phase-drift threshold: the smallest drift where injection without repair misses the target
    unrepaired = [t for t in table if t["repair"] == 0]
    failing = [t["drift"] for t in unrepaired if not ok(t)]
    threshold = min(failing) if failing else None
    predictors: dict[str, dict[str, float]] = {}
    # every unrepaired off-anchor injection: history drift (layout b) and shortlists
    scored = [r for r in rows if r["repair"] == 0 and r["drift"] > 0 and "predictors" in r]
    names = set.intersection(*(set(r["predictors"]) for r in scored)) if scored else set()
    for name in sorted(names):
        predictors[name] = {}
        for split, keep in (("dev", lambda r: r["case"] in dev_cases), ("test", lambda r: r["case"] not in dev_cases)):
            part = [r for r in scored if keep(r)]
            predictors[name][split] = round(spearman([r["predictors"][name] for r in part], [r["kl"] for r in part]), 4) \
                if len(part) > 2 else float("nan")
    best = max(predictors, key=lambda k: np.nan_to_num(predictors[k]["dev"], nan=-2)) if predictors else None
    baseline = predictors.get("drift", {})
    layouts = {
        "a_anchor": {str(h): _agg([r for r in rows if r["layout"] == "a" and r["history"] == h])
                     for h in sorted({r["history"] for r in rows if r["layout"] == "a"})},
        "b_history": {"threshold_drift": threshold, "policy_meets_target_at_every_drift":
                      all(ok(t) for t in table if t["repair"] == "policy")},
        "shortlist": {str(rep): {**_agg(g), "mean_drift": float(np.mean([r["drift"] for r in g]))}
                      for rep in (0, 8, "all", "policy", *alternatives)
                      if (g := [r for r in rows if r["layout"] == "shortlist" and r["repair"] == rep])},
    }
    return {"rows": table, "spearman_rho": {"predictor": best, "test": predictors[best]["test"] if best else None,
                                            "dev": predictors[best]["dev"] if best else None,
                                            "baseline_drift_test": baseline.get("test"), "all": predictors,
                                            "n_test": sum(r["case"] not in dev_cases for r in scored)},
            "layouts": layouts}


def run_kv(cases: Sequence[KVCase], bench: KVBench, run_dir: Path, drifts: Sequence[int] = DRIFTS,
           progress: Callable[[str, int, int], None] | None = None, alternatives: Sequence[str] = ALTERNATIVES,
           layouts: Sequence[str] = LAYOUTS) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for i, case in enumerate(cases):
        rows += bench.run_case(case, drifts, alternatives, layouts)
        write_jsonl(run_dir / "rows.jsonl", rows)
        if progress:
            progress(f"case {case.id}", i + 1, len(cases))
    dev = {c.id for i, c in enumerate(cases) if i % 2 == 0}
    result = summarise(rows, dev)
    result["policy"] = {"method": bench.policy.method, "threshold": bench.policy.threshold,
                        "per_token": bench.policy.per_token, "min_tokens": bench.policy.min_tokens}
    result["n_cases"] = len(cases)
    (run_dir / "result.json").write_text(json.dumps(result, indent=2, default=float), encoding="utf-8")
    return result


def plot_kv(run_dir: Path) -> list[Path]:
    """Fidelity (mean KL, with the noise floor) and latency ratio vs drift, per repair, from result.json."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))["rows"]
    repairs = list(dict.fromkeys(str(t["repair"]) for t in table))
    out = []
    for field, name, ylabel in (("kl_mean", "kv_fidelity_vs_drift.png", "mean KL vs re-prefill (nats)"),
                                ("latency_ratio_vs_reprefill", "kv_latency_vs_drift.png", "latency / re-prefill (p50)")):
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for repair in repairs:
            pts = [(max(t["drift"], 1), t[field]) for t in table if str(t["repair"]) == repair]
            ax.plot(*zip(*pts), "o-", label=f"repair {repair}", markersize=3)
        if field == "kl_mean":
            pts = sorted({(max(t["drift"], 1), t["noise_floor_kl"]) for t in table})
            ax.plot(*zip(*pts), "k--", label="noise floor (batch split)")
            ax.set_yscale("log")
        else:
            ax.axhline(1.0, color="grey", linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("drift (positions off the anchor; 0 plotted at 1)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = run_dir / name
        fig.savefig(path, dpi=120)
        plt.close(fig)
        out.append(path)
    return out
