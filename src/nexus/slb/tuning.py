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


def pairs_hash(pairs: Sequence[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for query, doc in pairs:
        h.update(f"{query}\0{doc}\n".encode())
    return h.hexdigest()


def _batches(pairs: list[tuple[str, str]], size: int) -> list[list[tuple[str, str]]]:
    """Batches without two pairs of the same tool (they would be false in-batch negatives)."""
    out, current, docs = [], [], set()
    for pair in pairs:
        if pair[1] in docs:
            continue
        current.append(pair)
        docs.add(pair[1])
        if len(current) == size:
            out.append(current)
            current, docs = [], set()
    return out + ([current] if len(current) > 1 else [])


def tune_embedder(pairs: Sequence[tuple[str, str]], out_dir: Path, base: Path | None = None,
                  recipe: TuningRecipe = TuningRecipe(), progress: bool = True) -> list[float]:
    """Fine-tune `base` (default: packaged MiniLM) on (query, tool text) pairs; return per-batch losses."""
    import torch
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    base = base or default_embedder_path()
    torch.manual_seed(recipe.seed)
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    model.max_seq_length = recipe.max_seq_length
    optimiser = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate)
    losses: list[float] = []
    started = time.perf_counter()
    model.train()
    for epoch in range(recipe.epochs):
        shuffled = list(pairs)
        random.Random(recipe.seed + epoch).shuffle(shuffled)
        for batch in tqdm(_batches(shuffled, recipe.batch_size), desc=f"tune epoch {epoch + 1}", disable=not progress):
            queries = model(model.preprocess([q for q, _ in batch]))["sentence_embedding"]
            docs = model(model.preprocess([d for _, d in batch]))["sentence_embedding"]
            logits = torch.nn.functional.normalize(queries, dim=-1) @ torch.nn.functional.normalize(docs, dim=-1).T
            loss = torch.nn.functional.cross_entropy(logits / recipe.temperature, torch.arange(len(batch)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(float(loss.item()))
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    meta = {"format_version": 1, "base_model": str(base), "pairs": len(pairs), "pairs_sha256": pairs_hash(pairs),
            "recipe": asdict(recipe), "train_seconds": round(time.perf_counter() - started, 1),
            "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None}
    (out_dir / "nexus-tuning.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    log.info("tuned embedder saved to %s", out_dir)
    return losses
