"""The split-turn scorer: cached tool sides give the same scores as computing both segments afresh, a tool's side
does not depend on any turn, and trained or loaded weights never meet stale sides."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from nexus.gate.turn_encoder import SplitTurnScorer

from .conftest import DISTRACTORS, PLANTED, PLANTED_QUERY, uncached_scores as _uncached

DOCS = [PLANTED, *DISTRACTORS]


@pytest.fixture(scope="module")
def scorer():
    import torch

    torch.set_num_threads(1)
    return SplitTurnScorer(None, max_length=64, seed=0)


def test_cached_sides_score_as_both_segments_computed_afresh(scorer):
    turns = [PLANTED_QUERY] * len(DOCS)
    fresh = _uncached(scorer, turns, DOCS)
    assert scorer.score(turns, DOCS) == pytest.approx(fresh, abs=1e-5)
    assert set(DOCS) <= set(scorer.network.tool_sides)
    assert scorer.score(turns, DOCS) == pytest.approx(fresh, abs=1e-5)   # every side from the cache now


def test_a_tools_side_does_not_read_the_turn(scorer):
    import torch

    scorer.network.eval()
    with torch.inference_mode():
        a = scorer._tool_sides(scorer._encode_docs(DOCS[:2]))
        b = scorer._tool_sides(scorer._encode_docs(DOCS[:2]))
    assert torch.equal(a[1], b[1])
    # the same tool scored beside other turns and other tools: the same score as alone
    mixed = ["what is the weather in Paris", PLANTED_QUERY, "book a table for two tonight"]
    docs = [DOCS[1], DOCS[0], DOCS[2]]
    fresh = SplitTurnScorer(None, max_length=64, seed=0)
    fresh.score(["something else entirely"] * len(DOCS), DOCS)
    assert fresh.score(mixed, docs) == pytest.approx(_uncached(scorer, mixed, docs), abs=1e-5)
    # and the score moves with the turn (the turn does read the tool)
    assert abs(scorer.score([PLANTED_QUERY], [PLANTED])[0] - scorer.score(["tell me a joke"], [PLANTED])[0]) > 1e-3


def test_training_mode_and_loaded_weights_drop_cached_sides(scorer):
    import torch

    scorer.score([PLANTED_QUERY] * len(DOCS), DOCS)
    changed = copy.deepcopy(scorer)
    state = changed.network.state_dict()
    torch.manual_seed(1)
    with torch.no_grad():
        state["encoder.encoder.layer.5.output.dense.weight"] += 0.05 * torch.randn_like(state["encoder.encoder.layer.5.output.dense.weight"])
    changed.network.load_state_dict(state)
    assert not changed.network.tool_sides
    turns = [PLANTED_QUERY] * len(DOCS)
    assert changed.score(turns, DOCS) == pytest.approx(_uncached(changed, turns, DOCS), abs=1e-5)
    scorer.network.train()
    with torch.no_grad():
        scorer.logits(scorer.encode([PLANTED_QUERY], [PLANTED]))
    scorer.network.eval()
    assert not scorer.network.tool_sides and not scorer._cache


def test_a_saved_split_turn_gate_loads_as_one(scorer, tmp_path):
    from nexus.gate.scorers import make_scorer, scorer_kind

    scorer.save(tmp_path)
    loaded = make_scorer("split-turn", tmp_path, max_length=64)
    assert scorer_kind(loaded) == "split-turn" and loaded.joint_from == scorer.joint_from
    turns = [PLANTED_QUERY] * len(DOCS)
    assert loaded.score(turns, DOCS) == pytest.approx(scorer.score(turns, DOCS), abs=1e-5)
