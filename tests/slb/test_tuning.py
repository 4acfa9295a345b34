import json

import numpy as np
import pytest

from nexus.slb import SentenceTransformerEmbedder
from nexus.slb.tuning import TuningRecipe, _batches, tune_embedder


def test_batches_never_hold_two_pairs_of_one_tool():
    pairs = [("q1", "a"), ("q2", "a"), ("q3", "b"), ("q4", "c"), ("q5", "b")]
    for batch in _batches(pairs, 2):
        docs = [d for _, d in batch]
        assert len(docs) == len(set(docs))


def test_tiny_tuning_run_lowers_loss_and_pulls_pairs_together(tmp_path):
    pairs = [("what's the weather like in Paris", "weather forecast: current conditions for a city"),
             ("convert 10 dollars to euros", "currency convert: exchange an amount between currencies"),
             ("book me a table for two tonight", "restaurant reserve: make a restaurant reservation"),
             ("play some jazz in the kitchen", "media play: play music on a speaker")] * 2
    losses = tune_embedder(pairs, tmp_path / "tuned", recipe=TuningRecipe(epochs=3, batch_size=4, learning_rate=1e-4, max_seq_length=32), progress=False)
    assert np.mean(losses[-2:]) < np.mean(losses[:2])
    meta = json.loads((tmp_path / "tuned" / "nexus-tuning.json").read_text())
    assert meta["pairs"] == 8 and meta["format_version"] == 1
    tuned = SentenceTransformerEmbedder(tmp_path / "tuned")
    # requests the run never saw still find their tool
    held_out = ["is it sunny in Rome today?", "how many euros is 50 dollars", "reserve a dinner table for four",
                "put on a jazz playlist in the living room"]
    docs = tuned.embed([d for _, d in pairs[:4]])
    assert (tuned.embed(held_out) @ docs.T).argmax(axis=1).tolist() == [0, 1, 2, 3]


def test_compact_tuning_stores_only_changed_tensors_and_loads_on_the_packaged_base(tmp_path):
    from nexus.slb.embedders import COMPACT_FILE

    pairs = [("what's the weather like in Paris", "weather forecast: current conditions for a city"),
             ("convert 10 dollars to euros", "currency convert: exchange an amount between currencies")] * 2
    recipe = TuningRecipe(epochs=1, batch_size=2, learning_rate=1e-4, max_seq_length=32, freeze_embeddings=True)
    tune_embedder(pairs, tmp_path / "embedder", recipe=recipe, progress=False, compact=True, meta={"command": "test"})
    compact = tmp_path / "embedder" / COMPACT_FILE
    assert compact.stat().st_size < 30e6          # the full fp32 folder is ~90 MB
    tuned = SentenceTransformerEmbedder(tmp_path / "embedder")
    base = SentenceTransformerEmbedder()
    assert tuned.id.startswith("st:embedder-") and tuned.id != base.id
    a, b = tuned.embed(["convert 10 dollars to euros"])[0], base.embed(["convert 10 dollars to euros"])[0]
    assert 0.9 < float(a @ b) < 1.0 - 1e-6         # moved by tuning, still the same model family
    meta = json.loads((tmp_path / "embedder" / "nexus-tuning.json").read_text())
    assert meta["compact"] and meta["command"] == "test"


def test_mined_negatives_are_the_base_models_top_wrong_tools_and_never_the_gold():
    from sentence_transformers import SentenceTransformer

    from nexus.slb.embedders import default_embedder_path
    from nexus.slb.tuning import mine_hard_negatives

    model = SentenceTransformer(str(default_embedder_path()), device="cpu", local_files_only=True)
    pool = ["weather forecast: current conditions for a city", "weather history: past conditions for a city",
            "currency convert: exchange an amount between currencies", "media play: play music on a speaker"]
    pairs = [("what's the weather like in Paris", pool[0]), ("convert 10 dollars to euros", pool[2])]
    mined = mine_hard_negatives(model, pairs, [pool, pool], n=1)
    assert mined[0] == [pool[1]]   # the near-duplicate is the weather pair's negative
    assert all(gold not in negs for (_, gold), negs in zip(pairs, mined))
    assert mine_hard_negatives(model, pairs, [[], pool], n=1)[0] == []


def test_a_mined_negative_that_is_another_pairs_gold_is_not_counted_twice(tmp_path):
    import torch
    from sentence_transformers import SentenceTransformer

    from nexus.slb.embedders import default_embedder_path
    from nexus.slb.tuning import _loss

    model = SentenceTransformer(str(default_embedder_path()), device="cpu", local_files_only=True)
    batch = [("what's the weather like in Paris", "weather forecast: current conditions for a city"),
             ("convert 10 dollars to euros", "currency convert: exchange an amount between currencies")]
    with torch.no_grad():
        plain = float(_loss(model, batch, [[], []], 0.05))
        # query 0's gold mined as query 1's negative: already a column, so query 0 is not taught against it
        repeated = float(_loss(model, batch, [[], [batch[0][1]]], 0.05))
        harder = float(_loss(model, batch, [["weather history: past conditions for a city"], []], 0.05))
    assert repeated == pytest.approx(plain, abs=1e-5)
    assert harder > plain + 1e-3


def test_hard_negative_tuning_needs_a_pool_per_pair(tmp_path):
    pairs = [("what's the weather like in Paris", "weather forecast: current conditions for a city")] * 2
    with pytest.raises(ValueError, match="one pool"):
        tune_embedder(pairs, tmp_path / "x", recipe=TuningRecipe(hard_negatives=1), progress=False)
