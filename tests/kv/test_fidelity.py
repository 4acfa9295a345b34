"""KL, top-1 and Spearman helpers against values computed by hand."""

import math

import numpy as np
import pytest

from nexus.kv.fidelity import entropy, kl_from_logits, margin, rankdata, spearman, top1_agrees


def test_kl_matches_hand_computed_values():
    # (P = (0.5, 0.5), Q = (0.9, 0.1): 0.5 ln(25/9) = 0.5108 is the module's doctest)
    # the other direction: 0.9 ln(1.8) + 0.1 ln(0.2) = 0.36806
    assert kl_from_logits(np.log([0.9, 0.1]), np.log([0.5, 0.5])) == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2), abs=1e-12)
    # logits, not probabilities: a constant shift changes nothing
    assert kl_from_logits(np.array([1.0, 2.0, 3.0]), np.array([11.0, 12.0, 13.0])) == pytest.approx(0.0, abs=1e-12)


def test_top1_margin_entropy():
    assert top1_agrees(np.array([0.1, 3.0, 2.9]), np.array([0.0, 1.0, 0.5]))
    assert not top1_agrees(np.array([0.1, 3.0, 2.9]), np.array([0.0, 1.0, 1.5]))
    assert margin(np.log([0.6, 0.3, 0.1])) == pytest.approx(math.log(2))
    assert entropy(np.log([0.25] * 4)) == pytest.approx(math.log(4))


def test_spearman_matches_hand_computed_values():
    # (ranks 1,2,4,3 against 1,2,3,4: rho = 1 - 6*2/(4*15) = 0.8 is the module's doctest)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties: x ranks 1.5,1.5,3,4; y ranks 1,2,3,4 -> Pearson of ranks = 4.5 / sqrt(4.5*5) = 0.9487
    assert spearman([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert rankdata([3, 1, 3, 3]).tolist() == [3.0, 1.0, 3.0, 3.0]
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="paired"):
        spearman([1, 2], [1])
