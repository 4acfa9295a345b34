"""A trained gate on disk: the cross-encoder folder plus a versioned header (`nexus_gate.json`).

The header records the format version, the base model, the training-data hash, the SLB it was calibrated
against (embedder id and fusion weights) and the calibration parameters. `GateModel.load` refuses a
folder whose header is missing, from another format version, or whose weights do not match their
recorded checksum; writes are atomic (a temporary folder renamed into place).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus.errors import ModelError
from nexus.gate.cross_encoder import PairScorer, SegmentCosineScorer
from nexus.gate.scorers import SCORERS, make_scorer, scorer_kind
from nexus.gate.probabilities import GateCalibration
from nexus.slb.store import file_sha256

FORMAT = "nexus-gate"
FORMAT_VERSION = 1
HEADER_FILE = "nexus_gate.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin", "segment_head.json")


class GateModelError(ModelError):
    """A gate model folder is missing, corrupt, or was built for something else."""


@dataclass(frozen=True)
class GateHeader:
    base_model: str
    embedder_id: str
    slb_weights: dict
    top_k: int
    max_length: int
    quantize: bool
    training: dict
    calibration: dict
    scorer: str = "cross-encoder"      # kind in scorers.SCORERS
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    weights_sha256: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))


class GateModel:
    """A scorer with its calibration; `GateModel.load(folder)` / `model.save(folder)`."""

    def __init__(self, scorer: PairScorer, calibration: GateCalibration, header: GateHeader):
        self.scorer = scorer
        self.calibration = calibration
        self.header = header

    @classmethod
    def from_scorer(cls, scorer: PairScorer, slb: Any, calibration: GateCalibration | None = None,
                    base_model: str | None = None) -> "GateModel":
        """An in-memory gate around any scorer, bound to `slb`'s embedder and weights (identity calibration
        unless given): for tests, fakes, and as the starting point of calibration."""
        cal = calibration or GateCalibration.identity()
        kind = scorer_kind(scorer)
        header = GateHeader(base_model=base_model or getattr(scorer, "id", "unknown"), embedder_id=slb.embedder.id, scorer=kind,
                            slb_weights={"lexical": slb.weights.lexical, "name_bonus": slb.weights.name_bonus},
                            top_k=10, max_length=getattr(scorer, "max_length", 0), quantize=bool(getattr(scorer, "quantized", False)),
                            training={}, calibration=cal.to_dict())
        return cls(scorer, cal, header)

    @property
    def embedder_id(self) -> str:
        return self.header.embedder_id

    def save(self, folder: str | Path, compact: bool = False) -> Path:
        """Write the scorer's weights and the header atomically (a sibling temp folder renamed into place);
        `compact`: only the tensors training changed, in fp16 (how the default gate ships in models/gate)."""
        folder = Path(folder)
        if not isinstance(self.scorer, tuple(SCORERS.values())):
            raise GateModelError(f"only gates with a trained scorer ({', '.join(SCORERS)}) can be saved")
        if compact and not isinstance(self.scorer, SegmentCosineScorer):
            # a cross-encoder's save() takes no `compact` (it used to end in a TypeError from `nexus gate export`)
            raise GateModelError(f"a compact save keeps the tensors a segment-cosine or split-cosine gate changed from "
                                 f"the packaged encoder; this gate's scorer is {scorer_kind(self.scorer)!r}")
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
        old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            self.scorer.save(tmp, compact=True) if compact else self.scorer.save(tmp)
            sums = {p.name: file_sha256(p) for p in _weight_files(tmp)}
            header = GateHeader(**{**self.header.to_dict(), "calibration": self.calibration.to_dict(), "weights_sha256": sums})
            (tmp / HEADER_FILE).write_text(json.dumps(header.to_dict(), indent=2, default=_json_default), encoding="utf-8")
            if folder.exists():
                folder.rename(old)
            tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
        self.header = header
        return folder

    def write_calibration(self, folder: str | Path, calibration: GateCalibration) -> None:
        """Replace the calibration in a saved model's header (atomic rename); the weights stay as they are."""
        folder = Path(folder)
        self.read_header(folder)  # refuse to touch a folder that is not an intact gate model
        header = GateHeader(**{**self.header.to_dict(), "calibration": calibration.to_dict()})
        tmp = folder / f".{HEADER_FILE}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(header.to_dict(), indent=2, default=_json_default), encoding="utf-8")
        os.replace(tmp, folder / HEADER_FILE)
        self.header, self.calibration = header, calibration

    @staticmethod
    def read_header(folder: str | Path) -> GateHeader:
        """Read and check the header only (cheap): format, version, required fields, weight checksums."""
        folder = Path(folder)
        path = folder / HEADER_FILE
        if not folder.is_dir():
            raise GateModelError(f"no gate model at {folder}; train one with `nexus gate train`")
        if not path.is_file():
            raise GateModelError(
                f"{folder} is not a Nexus gate model (no {HEADER_FILE}); train one with `nexus gate train`, or use a "
                f"Hugging Face cross-encoder as its base: `nexus gate train --base {folder} ...`"
            )
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise GateModelError(f"{path}: unreadable header ({exc}); retrain with `nexus gate train`") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise GateModelError(f"{path}: not a {FORMAT} header")
        if raw.get("format_version") != FORMAT_VERSION:
            raise GateModelError(
                f"{folder}: gate model format version {raw.get('format_version')!r}, this Nexus reads version "
                f"{FORMAT_VERSION}; retrain with `nexus gate train`"
            )
        try:
            header = GateHeader(**raw)
            if header.scorer not in SCORERS:
                raise ValueError(f"unknown scorer kind {header.scorer!r}")
            GateCalibration.from_dict(header.calibration)
        except (TypeError, KeyError, ValueError) as exc:
            raise GateModelError(f"{path}: header is incomplete or malformed ({exc}); retrain with `nexus gate train`") from None
        files = {p.name: p for p in _weight_files(folder)}
        if not header.weights_sha256 or set(files) != set(header.weights_sha256):
            raise GateModelError(f"{folder}: weight files {sorted(files)} do not match the header's {sorted(header.weights_sha256)}")
        for name, digest in header.weights_sha256.items():
            if file_sha256(files[name]) != digest:
                raise GateModelError(f"{folder}/{name}: checksum mismatch (corrupt or modified); retrain with `nexus gate train`")
        return header

    @classmethod
    def load(cls, folder: str | Path) -> "GateModel":
        folder = Path(folder)
        header = cls.read_header(folder)
        try:
            scorer = make_scorer(header.scorer, folder, max_length=header.max_length, quantize=header.quantize)
        except ModelError as exc:
            raise GateModelError(f"{folder}: {exc}") from None
        return cls(scorer, GateCalibration.from_dict(header.calibration), header)


def export_compact(src: str | Path, dst: str | Path) -> GateModel:
    """Copy a saved gate into the compact form (changed tensors in fp16, header and calibration unchanged):
    how `models/gate` is made from a `nexus gate train` folder."""
    header = GateModel.read_header(src)
    scorer = make_scorer(header.scorer, src, max_length=header.max_length, quantize=False)
    model = GateModel(scorer, GateCalibration.from_dict(header.calibration), header)
    model.save(dst, compact=True)
    return model


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
