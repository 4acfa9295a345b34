"""The semantic lookaside buffer: an INT8 embedding table over the registry, fused with a lexical channel.

>>> from nexus.registry import Registry, Tool
>>> from nexus.slb.embedders import HashEmbedder
>>> reg = Registry()
>>> _ = reg.set_source("s", [Tool("git_status", "Show the working tree status", {"type": "object"}, "s"),
...                          Tool("get_time", "Current time in a timezone", {"type": "object"}, "s")])
>>> slb = SemanticLookasideBuffer(HashEmbedder())
>>> _ = slb.sync(reg)
>>> slb.search("what is the current time in Tokyo", k=1)[0].key
'get_time'
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from nexus.errors import IndexFileError
from nexus.registry import Registry
from nexus.signatures import retrieval_text
from nexus.slb.embedders import Embedder, embedder_tag
from nexus.slb.lexical import LexicalIndex
from nexus.slb.quantize import int8_scores, quantize_rows, top_k
from nexus.slb.store import load_index, save_index

log = logging.getLogger(__name__)
QUANTISATION = {"scheme": "int8-symmetric-per-row", "qmax": 127, "accumulator": "int32"}
QUERY_MEMO = 256  # recent query vectors kept: one turn's texts (turn, context, requests) are embedded once


@dataclass(frozen=True)
class Hit:
    key: str
    score: float
    dense: float
    lexical: float


@dataclass(frozen=True)
class HybridWeights:
    """Fusion: dense cosine + lexical * BM25 (scaled to [0, 1] per query) + name_bonus on an exact name."""

    lexical: float = 0.1      # chosen on dev registries: see `lexical_weight` in nexus.config
    name_bonus: float = 1.0


@dataclass(frozen=True)
class SyncStats:
    embedded: int
    reused: int
    removed: int


class SemanticLookasideBuffer:
    def __init__(self, embedder: Embedder, weights: HybridWeights = HybridWeights(), keep_fp32: bool = False):
        self.embedder = embedder
        self.weights = weights
        self.keep_fp32 = keep_fp32
        self.keys: list[str] = []
        self.names: list[str] = []
        self.texts: list[str] = []
        self.row_hashes: list[str] = []
        self.codes = np.zeros((0, embedder.dim), dtype=np.int8)
        self.scales = np.zeros(0, dtype=np.float32)
        self.fp32: np.ndarray | None = None
        self.registry_hash = ""
        self._lexical: LexicalIndex | None = None
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of query texts: the ones not seen lately are embedded in one batch, and the last `QUERY_MEMO`
        are remembered, so every stage of one turn (the lookup, the gate's follow-up context, each request of a
        several-request turn, the fallback order) reuses one embedding instead of embedding the turn again."""
        unique = list(dict.fromkeys(texts))
        with self._queries_lock:
            found = {t: self._queries[t] for t in unique if t in self._queries}
        missing = [t for t in unique if t not in found]
        if missing:
            found.update(zip(missing, self.embedder.embed(missing)))
        with self._queries_lock:
            # this call's texts become the newest, then the oldest others go: a text read from the memo above is
            # never evicted between the lookup and the answer (nor by another thread's turn in between)
            for text, vec in found.items():
                self._queries[text] = vec
                self._queries.move_to_end(text)
            while len(self._queries) > max(QUERY_MEMO, len(found)):
                self._queries.popitem(last=False)
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, self.embedder.dim), np.float32)

    def forget_queries(self) -> None:
        """Empty the query memo, so the next lookup of any text embeds it again (a benchmark timing each path
        from scratch)."""
        with self._queries_lock:
            self._queries.clear()

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.scales.nbytes)

    def _row_hash(self, text: str) -> str:
        return hashlib.sha256(f"{embedder_tag(self.embedder)}\0{text}".encode()).hexdigest()

    def adopt_rows(self, other: "SemanticLookasideBuffer") -> None:
        """Start from `other`'s embedded rows (same embedder): the next `sync` embeds only texts it lacks."""
        if embedder_tag(other.embedder) == embedder_tag(self.embedder) and not self.keep_fp32:
            self.row_hashes, self.codes, self.scales = list(other.row_hashes), other.codes, other.scales

    def sync(self, registry: Registry) -> SyncStats:
        """Make the table match the registry, embedding only tools whose text changed."""
        keys = registry.keys()
        texts = [retrieval_text(k, registry.get(k)) for k in keys]
        hashes = [self._row_hash(t) for t in texts]
        old = {h: i for i, h in enumerate(self.row_hashes)}
        need_fp32 = self.keep_fp32 and self.fp32 is None
        missing = [i for i, h in enumerate(hashes) if h not in old or need_fp32]
        codes = np.zeros((len(keys), self.embedder.dim), dtype=np.int8)
        scales = np.zeros(len(keys), dtype=np.float32)
        fp32 = np.zeros((len(keys), self.embedder.dim), dtype=np.float32) if self.keep_fp32 else None
        for i, h in enumerate(hashes):
            if not need_fp32 and h in old:
                codes[i], scales[i] = self.codes[old[h]], self.scales[old[h]]
                if fp32 is not None and self.fp32 is not None:
                    fp32[i] = self.fp32[old[h]]
        if missing:
            vectors = self.embedder.embed([texts[i] for i in missing])
            new_codes, new_scales = quantize_rows(vectors)
            codes[missing], scales[missing] = new_codes, new_scales
            if fp32 is not None:
                fp32[missing] = vectors
        removed = len(set(self.row_hashes) - set(hashes))
        self.keys, self.texts, self.row_hashes = keys, texts, hashes
        self.names = [registry.get(k).name for k in keys]
        self.codes, self.scales, self.fp32 = codes, scales, fp32
        self.registry_hash = registry.content_hash()
        self._lexical = self._lexical_index()
        return SyncStats(embedded=len(missing), reused=len(keys) - len(missing), removed=removed)

    def _lexical_index(self) -> LexicalIndex | None:
        aliases = [(key, name) for key, name in zip(self.keys, self.names)]
        return LexicalIndex(aliases, self.texts) if self.keys else None

    def _channels(self, query: str, query_vec: np.ndarray | None, precision: str) -> tuple[np.ndarray, np.ndarray]:
        """(dense cosine, fused score) of every tool for one query."""
        if query_vec is None:
            query_vec = self.embed_queries([query])[0]
        if precision == "fp32":
            if self.fp32 is None:
                raise ValueError("fp32 scores need SemanticLookasideBuffer(keep_fp32=True)")
            dense = self.fp32 @ query_vec
        else:
            dense = int8_scores(self.codes, self.scales, query_vec)
        lexical = self._lexical.bm25(query)
        peak = float(lexical.max())
        if peak > 0:
            lexical = lexical / peak
        fused = dense + self.weights.lexical * lexical + self.weights.name_bonus * self._lexical.name_matches(query)
        return dense, fused

    def scores(self, query: str, query_vec: np.ndarray | None = None, precision: str = "int8") -> np.ndarray:
        """Fused score of every tool for one query (higher is better), in `self.keys` order."""
        if not self.keys:
            return np.zeros(0, dtype=np.float32)
        return self._channels(query, query_vec, precision)[1]

    def search(self, query: str, k: int = 10, query_vec: np.ndarray | None = None, precision: str = "int8") -> list[Hit]:
        """Top-k tools for a query, exact over the whole table."""
        if not self.keys:
            return []
        dense, fused = self._channels(query, query_vec, precision)
        return [
            Hit(key=self.keys[i], score=float(fused[i]), dense=float(dense[i]), lexical=float(fused[i] - dense[i]))
            for i in top_k(fused, k)
        ]

    def hits_for(self, query: str, keys: Sequence[str], query_vec: np.ndarray | None = None) -> list[Hit]:
        """`query`'s channels for the given tools (unknown keys are skipped), in the order given: candidates
        found by another query (a clause of the turn) scored on the same scale as `search(query)`'s."""
        if not keys or not self.keys:
            return []
        dense, fused = self._channels(query, query_vec, "int8")
        rows = {key: i for i, key in enumerate(self.keys)}
        return [Hit(key=k, score=float(fused[rows[k]]), dense=float(dense[rows[k]]), lexical=float(fused[rows[k]] - dense[rows[k]]))
                for k in keys if k in rows]

    # -- persistence -------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        header = {
            "embedder_id": self.embedder.id, "quantisation": QUANTISATION, "registry_hash": self.registry_hash,
            "keys": self.keys, "names": self.names, "texts": self.texts, "row_hashes": self.row_hashes,
        }
        save_index(Path(path), header, self.codes, self.scales)

    def load(self, path: str | Path) -> None:
        """Load a saved table; raise IndexFileError if it is corrupt or built for another embedder."""
        stored = load_index(Path(path))
        header = stored.header
        if header.get("embedder_id") != self.embedder.id:
            raise IndexFileError(f"{path}: built with embedder {header.get('embedder_id')!r}, not {self.embedder.id!r}")
        if header.get("quantisation") != QUANTISATION or int(header["dim"]) != self.embedder.dim:
            raise IndexFileError(f"{path}: quantisation or dimension differs from this build")
        keys, texts, hashes = list(header["keys"]), list(header["texts"]), list(header["row_hashes"])
        names = list(header.get("names", []))
        if not (len(keys) == len(names) == len(texts) == len(hashes) == stored.codes.shape[0]):
            raise IndexFileError(f"{path}: header lists do not match the payload rows")
        self.keys, self.names, self.texts, self.row_hashes = keys, names, texts, hashes
        self.codes, self.scales, self.fp32 = stored.codes, stored.scales, None
        self.registry_hash = header.get("registry_hash", "")
        self._lexical = self._lexical_index()

    def open(self, path: str | Path, registry: Registry) -> SyncStats:
        """Load `path` if usable, bring it up to date with `registry` incrementally, and save it back.

        A corrupt or mismatched file is reported with a warning and rebuilt, never used.
        """
        path = Path(path)
        if path.exists():
            try:
                self.load(path)
            except IndexFileError as exc:
                log.warning("rebuilding the SLB: %s", exc)
        stats = self.sync(registry)
        if stats.embedded or stats.removed or not path.exists():
            self.save(path)
        return stats
