"""Calibration maths against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nexus.gate.calibration import (
    auroc, ece_if_calibrated, expected_calibration_error, fit_conditional_logit, fit_isotonic, fit_logistic, fit_temperature,
    reliability_bins, risk_coverage, sigmoid, threshold_for_risk,
)


def test_ece_hand_computed():
    # bins of width 1/15: 0.9 -> bin 13, 0.2 -> bin 3, 0.5 -> bin 7
    p = np.array([0.9, 0.9, 0.9, 0.9, 0.2, 0.2, 0.5, 0.5])
    y = np.array([1, 1, 1, 0, 0, 0, 1, 0])
    # bin 13: acc .75 conf .9 -> |.15| * 4/8 ; bin 3: acc 0 conf .2 -> .2 * 2/8 ; bin 7: acc .5 conf .5 -> 0
    assert expected_calibration_error(p, y) == pytest.approx(0.15 * 0.5 + 0.2 * 0.25)


def test_ece_perfectly_calibrated_is_zero_and_bins_cover_edges():
    p = np.array([0.0, 1.0, 1.0, 0.0])
    y = np.array([0, 1, 1, 0])
    assert expected_calibration_error(p, y) == pytest.approx(0.0)
    counts, _, _ = reliability_bins(p, y)
    assert counts[0] == 2 and counts[-1] == 2 and counts.sum() == 4


def test_ece_noise_floor_of_a_calibrated_predictor():
    # certain predictions leave no room for noise
    assert ece_if_calibrated(np.ones(50)) == (0.0, 0.0)
    # one bin at p=0.5 with n turns: the ECE is |mean - 0.5|, half-normal with sd = sqrt(0.25/n): its median is
    # 0.674 sd and its 95th percentile 1.96 sd (within 2.5 standard errors of 400 draws, 0.1 and 0.25 sd, plus the
    # 1/n grid the means of n outcomes fall on)
    for n in (400, 4000):
        sd = math.sqrt(0.25 / n)
        med, hi = ece_if_calibrated(np.full(n, 0.5), draws=400)
        assert med == pytest.approx(0.674 * sd, abs=0.1 * sd + 1 / n)
        assert hi == pytest.approx(1.96 * sd, abs=0.25 * sd + 1 / n)


def test_auroc_with_ties_and_extremes():
    # (the untied case 0.1, 0.4, 0.35, 0.8 -> 0.75 is the module's doctest)
    assert auroc(np.array([0.5, 0.5]), np.array([0, 1])) == pytest.approx(0.5)
    assert auroc(np.array([0.1, 0.5, 0.5, 0.9]), np.array([0, 0, 1, 1])) == pytest.approx(0.875)  # one tied pair: half
    assert auroc(np.array([0.1, 0.2, 0.9]), np.array([0, 0, 1])) == pytest.approx(1.0)
    assert math.isnan(auroc(np.array([0.1, 0.2]), np.array([1, 1])))


def test_temperature_fit_matches_closed_form():
    # every row has logits [1, 0]; 75% of labels are class 0, so softmax(1/T)[0] must be 0.75: 1/T = ln 3
    logits = np.tile([1.0, 0.0], (400, 1))
    labels = np.array([0] * 300 + [1] * 100)
    assert fit_temperature(logits, labels) == pytest.approx(1 / math.log(3), rel=1e-4)


def test_conditional_logit_with_one_feature_is_inverse_temperature():
    logits = np.tile([1.0, 0.0], (400, 1))
    labels = np.array([0] * 300 + [1] * 100)
    w = fit_conditional_logit(logits[:, :, None], labels, l2=0.0)
    assert w[0] == pytest.approx(math.log(3), rel=1e-4)


def test_conditional_logit_recovers_weights_and_respects_mask():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 6, 2))
    true_w = np.array([2.0, -1.0])
    s = x @ true_w
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    labels = np.array([rng.choice(6, p=row) for row in p])
    w = fit_conditional_logit(x, labels, l2=0.0)
    assert w == pytest.approx(true_w, abs=0.15)
    mask = np.ones((3000, 6), dtype=bool)
    mask[:, 5] = False
    x2 = x.copy()
    x2[:, 5] = 100.0  # padding must not matter
    labels2 = np.minimum(labels, 4)
    assert np.all(np.isfinite(fit_conditional_logit(x2, labels2, mask)))


def test_platt_fit_matches_frequencies():
    x = np.array([0.0] * 400 + [1.0] * 400)
    y = np.array([1] * 100 + [0] * 300 + [1] * 300 + [0] * 100)
    m = fit_logistic(x[:, None], y, l2=0.0)
    assert m(np.array([[0.0], [1.0]])) == pytest.approx([0.25, 0.75], abs=1e-6)


def test_logistic_map_round_trips_through_dict():
    m = fit_logistic(np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]]), np.array([0, 0, 1, 1]), l2=0.1)
    from nexus.gate.calibration import LogisticMap

    again = LogisticMap.from_dict(m.to_dict())
    assert again(np.array([[1.5, 1.0]])) == pytest.approx(m(np.array([[1.5, 1.0]])))


def test_threshold_for_risk_hand_cases():
    # (risk 0 -> 0.95 and risk 0.25 -> 0.6 on these turns are threshold_for_risk's doctest)
    conf = np.array([0.99, 0.95, 0.9, 0.6])
    ok = np.array([1, 1, 0, 1])
    assert threshold_for_risk(conf, ok, 0.0, min_accepted=3) == math.inf   # only two turns before the first error
    assert threshold_for_risk(conf, ok, 0.0, min_accepted=2) == 0.95
    # ties are accepted together: the tie at 0.9 holds an error, so it cannot be split
    assert threshold_for_risk(np.array([0.9, 0.9, 0.8]), np.array([1, 0, 1]), 0.0) == math.inf


def test_threshold_with_a_confidence_bound_is_more_conservative():
    from nexus.gate.calibration import wilson_upper

    # 100 error-free turns: empirical risk 0 meets 2%, but the 95% upper bound z^2/(n+z^2) = 2.6% does not
    conf = np.linspace(1.0, 0.5, 100)
    assert threshold_for_risk(conf, np.ones(100), 0.02) == pytest.approx(0.5)
    assert threshold_for_risk(conf, np.ones(100), 0.02, z=1.645) == math.inf
    assert threshold_for_risk(conf, np.ones(100), 0.03, z=1.645) == pytest.approx(0.5)
    assert float(wilson_upper(np.array(0), np.array(100), 1.645)) == pytest.approx(1.645**2 / (100 + 1.645**2))
    rng = np.random.default_rng(0)
    c = rng.random(2000)
    ok = rng.random(2000) < c
    assert threshold_for_risk(c, ok, 0.05, z=1.645) >= threshold_for_risk(c, ok, 0.05)


def test_risk_coverage_curve():
    cov, risk, thr = risk_coverage(np.array([0.2, 0.9, 0.5]), np.array([0, 1, 1]))
    assert cov.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert risk.tolist() == pytest.approx([0.0, 0.0, 1 / 3])
    assert thr.tolist() == [0.9, 0.5, 0.2]


def test_isotonic_is_monotone_and_pools_violators():
    xs, values = fit_isotonic(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.0, 1.0, 0.0, 1.0]))
    assert np.all(np.diff(values) >= 0)
    assert values.tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_sigmoid_is_stable():
    assert sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_weighted_threshold_counts_each_error_at_its_weight():
    c = np.array([0.9, 0.8, 0.7, 0.6])
    ok = np.array([1, 1, 0, 1])
    # unweighted: accepting down to 0.6 gives 1 error in 4 (25%)
    assert threshold_for_risk(c, ok, 0.25) == 0.6
    # the wrong item weighs 3: 3 / 6 = 50% at 0.6, and 3 / 5 at 0.7; only 0.8 and up stay within 25%
    assert threshold_for_risk(c, ok, 0.25, weights=np.array([1, 1, 3, 1])) == 0.8
