"""Calibration maths for the boundary gate: pure numpy, explicit inputs, no model code.

Every function takes arrays of scores/probabilities and labels and returns numbers or fitted
parameters, so it can be tested against hand-computed cases.

>>> import numpy as np
>>> round(expected_calibration_error(np.array([0.9, 0.9, 0.2, 0.2]), np.array([1, 1, 0, 1])), 3)
0.2
>>> round(auroc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])), 2)
0.75
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ECE_BINS = 15
_EPS = 1e-12


def sigmoid(x: np.ndarray | float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def logit(p: np.ndarray | float, eps: float = 1e-6) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), eps, 1.0 - eps)
    return np.log(p) - np.log1p(-p)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


# -- measuring calibration --------------------------------------------------------------------------
def reliability_bins(p: np.ndarray, y: np.ndarray, n_bins: int = ECE_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per equal-width bin [i/n, (i+1)/n) (the last closed): count, mean confidence, accuracy (NaN if empty)."""
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if p.shape != y.shape:
        raise ValueError(f"p and y differ in length: {p.shape} vs {y.shape}")
    idx = np.minimum((p * n_bins).astype(int), n_bins - 1)
    idx = np.maximum(idx, 0)
    counts = np.bincount(idx, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(idx, weights=p, minlength=n_bins) / counts
        acc = np.bincount(idx, weights=y, minlength=n_bins) / counts
    return counts, conf, acc


def expected_calibration_error(p: np.ndarray, y: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """ECE = sum over bins of (bin share) * |accuracy - mean confidence|; 15 equal-width bins by default."""
    counts, conf, acc = reliability_bins(p, y, n_bins)
    n = counts.sum()
    if n == 0:
        return float("nan")
    used = counts > 0
    return float(np.sum(counts[used] / n * np.abs(acc[used] - conf[used])))


def ece_if_calibrated(p: np.ndarray, n_bins: int = ECE_BINS, draws: int = 200, seed: int = 0) -> tuple[float, float]:
    """The ECE a perfectly calibrated predictor would still show with these confidences on this many turns
    (outcomes drawn as Bernoulli(p)): (median, 95th percentile) over `draws`. A measured ECE near this is
    sampling noise, not miscalibration.

    >>> med, hi = ece_if_calibrated(np.full(400, 0.5))  # one bin: |mean - 0.5|, median ~ 0.674 * sqrt(0.25 / 400)
    >>> round(med, 4), round(hi, 4)
    (0.0175, 0.05)
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    if p.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    values = [expected_calibration_error(p, rng.random(p.size) < p, n_bins) for _ in range(draws)]
    return float(np.median(values)), float(np.percentile(values, 95))


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (positives = label 1), ties counted half (Mann-Whitney U)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel().astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    # average ranks over ties
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_s)) + 1]
    ends = np.r_[starts[1:], len(s)]
    for a, b in zip(starts, ends):
        ranks[order[a:b]] = (a + b + 1) / 2.0  # 1-based mean rank of positions a..b-1
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def risk_coverage(confidence: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Accept the most confident first: (coverage, selective risk, threshold) after each accepted item."""
    c = np.asarray(confidence, dtype=np.float64).ravel()
    ok = np.asarray(correct, dtype=np.float64).ravel()
    order = np.argsort(-c, kind="mergesort")
    errors = np.cumsum(1.0 - ok[order])
    accepted = np.arange(1, len(c) + 1, dtype=np.float64)
    return accepted / max(len(c), 1), errors / accepted, c[order]


def wilson_upper(errors: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    """One-sided Wilson score upper bound of an error rate (z = 1.645 for 95%).

    >>> round(float(wilson_upper(np.array(0), np.array(300), 1.645)), 4)
    0.0089
    """
    n = np.asarray(n, dtype=np.float64)
    p = np.asarray(errors, dtype=np.float64) / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    spread = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (centre + spread) / (1 + z2 / n)


def threshold_for_risk(confidence: np.ndarray, correct: np.ndarray, target_risk: float, min_accepted: int = 1,
                       z: float = 0.0, weights: np.ndarray | None = None) -> float:
    """Lowest confidence threshold whose accepted set keeps its error rate <= target_risk.

    With z = 0 the empirical error rate is used; with z > 0 its one-sided Wilson upper bound, so the
    target holds with that confidence on new turns from the same distribution (z = 1.645: 95%).
    Items are accepted when confidence >= threshold; ties are accepted together. Returns +inf when
    no non-empty set meets the target (so nothing is accepted). `weights` re-weight items (e.g. to the class mix
    expected in use); the Wilson bound then uses the effective sample size (sum w)^2 / sum w^2.

    >>> threshold_for_risk(np.array([0.99, 0.95, 0.9, 0.6]), np.array([1, 1, 0, 1]), 0.0)
    0.95
    >>> threshold_for_risk(np.array([0.99, 0.95, 0.9, 0.6]), np.array([1, 1, 0, 1]), 0.25)
    0.6
    """
    c = np.asarray(confidence, dtype=np.float64).ravel()
    ok = np.asarray(correct, dtype=np.float64).ravel()
    if len(c) == 0:
        return float("inf")
    w = np.ones_like(c) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    order = np.argsort(-c, kind="mergesort")
    cs, w = c[order], w[order]
    mass, errs = np.cumsum(w), np.cumsum(w * (1.0 - ok[order]))
    count = np.arange(1, len(c) + 1)
    n_eff = mass ** 2 / np.cumsum(w * w)
    # only positions where the next item has a strictly lower confidence are valid cut points
    last_of_tie = np.r_[cs[1:] < cs[:-1], True]
    rate = errs / mass
    risk = wilson_upper(rate * n_eff, n_eff, z) if z > 0 else rate
    valid = last_of_tie & (risk <= target_risk + 1e-12) & (count >= min_accepted)
    if not valid.any():
        return float("inf")
    return float(cs[np.flatnonzero(valid)[-1]])


# -- fitting calibration maps -----------------------------------------------------------------------
def fit_temperature(logits: np.ndarray, labels: np.ndarray, bounds: tuple[float, float] = (0.05, 20.0)) -> float:
    """Temperature T minimising the NLL of softmax(logits / T) at the true `labels` (class indices).

    `logits` is (n, classes). Convex in 1/T, solved by golden-section search on log T.
    """
    z = np.asarray(logits, dtype=np.float64)
    idx = np.asarray(labels, dtype=int)
    rows = np.arange(len(z))

    def nll(log_t: float) -> float:
        s = z / np.exp(log_t)
        s = s - s.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(s).sum(axis=1)) - s[rows, idx]))

    return float(np.exp(_golden_min(nll, np.log(bounds[0]), np.log(bounds[1]))))


def _golden_min(f, lo: float, hi: float, iters: int = 80) -> float:
    g = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2.0


@dataclass(frozen=True)
class LogisticMap:
    """p = sigmoid(w . standardised(x) + b): Platt scaling generalised to a few features."""

    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return sigmoid(z @ np.asarray(self.weights) + self.bias)

    def to_dict(self) -> dict:
        return {"weights": list(self.weights), "bias": self.bias, "mean": list(self.mean), "scale": list(self.scale)}

    @classmethod
    def from_dict(cls, d: dict) -> "LogisticMap":
        return cls(tuple(map(float, d["weights"])), float(d["bias"]), tuple(map(float, d["mean"])), tuple(map(float, d["scale"])))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, sample_weight: np.ndarray | None = None, iters: int = 100) -> LogisticMap:
    """Logistic regression by Newton's method (IRLS) with a small ridge on the weights (not the bias).

    With one feature this is Platt scaling: p = sigmoid(a * x + b).
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    if x.shape[0] == 1 and np.asarray(y).size > 1:
        x = x.T
    y = np.asarray(y, dtype=np.float64).ravel()
    w_s = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = np.c_[(x - mean) / scale, np.ones(len(x))]
    theta = np.zeros(z.shape[1])
    ridge = np.full(z.shape[1], l2 * w_s.sum())
    ridge[-1] = 0.0
    for _ in range(iters):
        p = sigmoid(z @ theta)
        grad = z.T @ (w_s * (p - y)) + ridge * theta
        hess = (z * (w_s * p * (1 - p))[:, None]).T @ z + np.diag(ridge) + 1e-9 * np.eye(z.shape[1])
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return LogisticMap(tuple(theta[:-1]), float(theta[-1]), tuple(mean), tuple(scale))


def fit_conditional_logit(features: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None, l2: float = 1e-3, iters: int = 100) -> np.ndarray:
    """Weights w of a softmax over candidates: p(i) ∝ exp(w . features[i]) (McFadden's conditional logit).

    `features` is (n, k, f), `labels` the index of the right candidate per row, `mask` (n, k) marks
    real candidates (padding is False). Fitted by Newton's method; used to fuse the cross-encoder
    logit with the lookaside buffer's channels, and equal to temperature scaling with one feature.
    """
    x = np.asarray(features, dtype=np.float64)
    n, k, f = x.shape
    m = np.ones((n, k), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    idx = np.asarray(labels, dtype=int)
    w = np.zeros(f)
    for _ in range(iters):
        s = np.where(m, x @ w, -np.inf)
        p = softmax(s, axis=1)
        mean_x = np.einsum("nk,nkf->nf", p, x)
        grad = (mean_x - x[np.arange(n), idx]).sum(axis=0) + l2 * n * w
        second = np.einsum("nk,nkf,nkg->fg", p, x, x) - mean_x.T @ mean_x
        step = np.linalg.solve(second + l2 * n * np.eye(f) + 1e-9 * np.eye(f), grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


def fit_isotonic(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool-adjacent-violators: a non-decreasing step map; returns (knots x, values) for np.interp."""
    order = np.argsort(np.asarray(x, dtype=np.float64), kind="mergesort")
    xs = np.asarray(x, dtype=np.float64)[order]
    ys = np.asarray(y, dtype=np.float64)[order]
    values: list[float] = []
    weights: list[float] = []
    right: list[float] = []
    for xi, yi in zip(xs, ys):
        values.append(yi)
        weights.append(1.0)
        right.append(xi)
        while len(values) > 1 and values[-2] > values[-1]:
            w = weights[-2] + weights[-1]
            v = (values[-2] * weights[-2] + values[-1] * weights[-1]) / w
            values[-2:], weights[-2:], right[-2:] = [v], [w], [right[-1]]
    return np.asarray(right), np.asarray(values)
