"""Fidelity of an injected KV against a full re-prefill: pure numpy, on next-token logits.

KL is KL(reference || candidate) in nats over the whole vocabulary: how much the distribution the full
re-prefill gives (the reference) is misdescribed by the one after injection. Spearman's rho ranks with
average ties, so it matches the textbook definition on tied data too.

>>> round(kl_from_logits(np.log([0.5, 0.5]), np.log([0.9, 0.1])), 4)
0.5108
>>> spearman([1, 2, 3, 4], [10, 20, 40, 30])
0.8
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    x = np.asarray(logits, dtype=np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def kl_from_logits(reference: np.ndarray, candidate: np.ndarray) -> float:
    """KL(softmax(reference) || softmax(candidate)) in nats; 0 for identical inputs, never negative."""
    log_p, log_q = log_softmax(reference), log_softmax(candidate)
    p = np.exp(log_p)
    return float(max((p * (log_p - log_q)).sum(), 0.0))


def top1_agrees(reference: np.ndarray, candidate: np.ndarray) -> bool:
    return int(np.argmax(reference)) == int(np.argmax(candidate))


def margin(logits: np.ndarray) -> float:
    """Log-probability gap between the best and the second-best token (how sure the model is)."""
    top2 = np.partition(log_softmax(logits), -2)[-2:]
    return float(top2[1] - top2[0])


def entropy(logits: np.ndarray) -> float:
    log_p = log_softmax(logits)
    return float(-(np.exp(log_p) * log_p).sum())


def rankdata(values: Sequence[float]) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span.

    >>> rankdata([10, 20, 20, 5]).tolist()
    [2.0, 3.5, 3.5, 1.0]
    """
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    start = 0
    while start < len(x):
        end = start
        while end + 1 < len(x) and sorted_x[end + 1] == sorted_x[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's r of the ranks); NaN when either side is constant or n < 2."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs paired samples; got {len(x)} and {len(y)} values")
    if len(x) < 2:
        return float("nan")
    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else float("nan")
