import numpy as np
import pytest

from nexus.slb.quantize import dequantize_rows, int8_scores, quantize_rows, top_k


def unit_rows(n, d, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_round_trip_error_is_within_half_a_step():
    x = unit_rows(200, 64)
    codes, scales = quantize_rows(x)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    err = np.abs(dequantize_rows(codes, scales) - x)
    assert np.all(err <= scales[:, None] / 2 + 1e-7)
    assert np.abs(codes).max() == 127


def test_zero_row_is_safe():
    codes, scales = quantize_rows(np.zeros((1, 8), dtype=np.float32))
    assert not codes.any() and scales.tolist() == [1.0]  # no division by a zero peak
    assert dequantize_rows(codes, scales).tolist() == [[0.0] * 8]


def test_int8_scores_match_fp32_closely():
    x, q = unit_rows(500, 384, 1), unit_rows(1, 384, 2)[0]
    codes, scales = quantize_rows(x)
    assert np.max(np.abs(int8_scores(codes, scales, q) - x @ q)) < 0.01


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_equals_brute_force_fp32_oracle(seed):
    x = unit_rows(3000, 64, seed)
    # a query close to a known row, so the oracle's top-k is well separated from quantisation noise
    q = x[seed * 7] + 0.3 * unit_rows(1, 64, seed + 10)[0]
    q /= np.linalg.norm(q)
    codes, scales = quantize_rows(x)
    oracle = np.argsort(-(x @ q), kind="stable")[:10]
    got = top_k(int8_scores(codes, scales, q), 10)
    assert got[0] == oracle[0]
    assert len(set(got) & set(oracle)) >= 9


def test_top_k_exact_order_and_bounds():
    scores = np.array([0.1, 0.9, 0.5, 0.9, -1.0], dtype=np.float32)
    assert top_k(scores, 3).tolist() == [1, 3, 2]
    assert top_k(scores, 99).tolist() == [1, 3, 2, 0, 4]
    assert top_k(scores, 0).tolist() == []
