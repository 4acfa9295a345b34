"""The table of pair scorers a gate can be built on; unknown kinds are errors, never a silent default.

>>> sorted(SCORERS)
['cross-encoder', 'segment-cosine', 'split-cosine', 'split-turn']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexus.errors import ModelError
from nexus.gate.cross_encoder import CrossEncoderScorer, SegmentCosineScorer
from nexus.gate.split_encoder import SplitCosineScorer
from nexus.gate.turn_encoder import SplitTurnScorer

SCORERS = {"cross-encoder": CrossEncoderScorer, "segment-cosine": SegmentCosineScorer, "split-cosine": SplitCosineScorer,
           "split-turn": SplitTurnScorer}


def make_scorer(kind: str, path: str | Path | None = None, **kwargs: Any) -> Any:
    """Build a scorer from the table."""
    try:
        cls = SCORERS[kind]
    except KeyError:
        raise ModelError(f"unknown scorer kind {kind!r}; choose one of {', '.join(SCORERS)}") from None
    return cls(path, **kwargs)


def scorer_kind(scorer: Any) -> str:
    """The table's name for a scorer instance (the most specific class wins: a split scorer is a segment one too)."""
    return next((k for k, cls in SCORERS.items() if type(scorer) is cls), None) or \
        next((k for k, cls in SCORERS.items() if isinstance(scorer, cls)), "cross-encoder")
