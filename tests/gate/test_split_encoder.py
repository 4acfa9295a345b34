"""The split scorer: cached tool states give the same scores as computing both segments afresh, a tool's cached
states do not depend on the turn they were first scored with, and trained weights never meet stale states."""

from __future__ import annotations

import numpy as np
import pytest

from nexus.gate.split_encoder import SplitCosineScorer

from .conftest import DISTRACTORS, PLANTED, PLANTED_QUERY, uncached_scores as _uncached

DOCS = [PLANTED, *DISTRACTORS]


@pytest.fixture(scope="module")
def scorer():
    import torch

    torch.set_num_threads(1)
    return SplitCosineScorer(None, max_length=64, seed=0)


def test_cached_scores_equal_both_segments_computed_afresh(scorer):
    turns = [PLANTED_QUERY] * len(DOCS)
    fresh = _uncached(scorer, turns, DOCS)
    assert scorer.score(turns, DOCS) == pytest.approx(fresh, abs=1e-5)
    # second call: every tool's lower states now come from the cache
    assert set(DOCS) <= set(scorer._cache)
    assert scorer.score(turns, DOCS) == pytest.approx(fresh, abs=1e-5)


def test_a_tools_cached_states_do_not_depend_on_the_first_turn(scorer):
    other = SplitCosineScorer(None, max_length=64, seed=0)
    other.score(["book a table for two tonight"] * len(DOCS), DOCS)   # fills the cache under another turn
    mixed = ["what is the weather in Paris", PLANTED_QUERY, "what is the weather in Paris"]
    docs = [DOCS[1], DOCS[0], DOCS[2]]
    assert other.score(mixed, docs) == pytest.approx(_uncached(scorer, mixed, docs), abs=1e-5)


def test_training_mode_drops_cached_states(scorer):
    import torch

    scorer.score([PLANTED_QUERY] * len(DOCS), DOCS)
    scorer.network.train()
    with torch.no_grad():
        scorer.logits(scorer.encode([PLANTED_QUERY], [PLANTED]))
    scorer.network.eval()
    assert not scorer._cache


def test_the_split_point_is_checked_and_saved(scorer, tmp_path):
    from nexus.gate.scorers import make_scorer

    with pytest.raises(ValueError, match="joint_from"):
        SplitCosineScorer(None, max_length=64, joint_from=9)
    scorer.joint_from = 5
    try:
        scorer.save(tmp_path)
    finally:
        scorer.joint_from = 4
    loaded = make_scorer("split-cosine", tmp_path, max_length=64)
    assert (loaded.joint_from, loaded.turn_tokens, loaded.tool_offset) == (5, scorer.turn_tokens, scorer.tool_offset)


def test_weights_changed_in_place_never_meet_stale_states(scorer):
    """Regression: a deep copy carried the cache, then its weights were rounded (`load_state_dict`): the copy kept
    scoring with the old weights' tool states."""
    import copy

    import torch

    scorer.score([PLANTED_QUERY] * len(DOCS), DOCS)
    changed = copy.deepcopy(scorer)
    state = changed.network.state_dict()
    torch.manual_seed(1)
    weight = state["encoder.encoder.layer.0.output.dense.weight"]
    with torch.no_grad():
        weight += 0.05 * torch.randn_like(weight)
    changed.network.load_state_dict(state)
    turns = [PLANTED_QUERY] * len(DOCS)
    assert changed.score(turns, DOCS) == pytest.approx(_uncached(changed, turns, DOCS), abs=1e-5)
    assert not np.allclose(changed.score(turns, DOCS), scorer.score(turns, DOCS), atol=1e-3)


def test_scores_read_aside_leave_the_cache_and_later_scores_as_they_were():
    """The gate's reference turns (`nexus.gate.reference`) are scored aside: what they read is not kept."""
    aside = SplitCosineScorer(None, max_length=64, seed=0, quantize=True)
    plain = SplitCosineScorer(None, max_length=64, seed=0, quantize=True)
    first = aside.score(["hello there, how are you?"] * 3, DOCS[1:4], keep=False)
    assert len(first) == 3 and not aside._cache
    turns = [PLANTED_QUERY] * len(DOCS)
    assert aside.score(turns, DOCS) == pytest.approx(plain.score(turns, DOCS), abs=1e-6)
    assert list(aside._cache) == list(plain._cache)


def test_with_int8_weights_a_tools_states_do_not_depend_on_the_tools_read_with_it():
    """INT8's activation scale is the batch's: a tool read beside other tools had states that depended on them, so a turn's
    decision depended on what the cache had read before it (held-out set 51: "How are you doing today?" was NO_TOOL on its
    own and a SHORTLIST after twenty demo turns). Each tool is read alone."""
    first = SplitCosineScorer(None, max_length=64, seed=0, quantize=True)
    later = SplitCosineScorer(None, max_length=64, seed=0, quantize=True)
    first.score(["hello there"] * 3, DOCS[:3])            # DOCS[2] first read beside DOCS[0] and DOCS[1]
    later.score(["hello there"] * 3, DOCS[2:5])           # ... and here beside two others
    turns = [PLANTED_QUERY] * len(DOCS)
    assert first.score(turns, DOCS) == pytest.approx(later.score(turns, DOCS), abs=1e-6)
