import json

import numpy as np

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
    q = tuned.embed(["play some jazz in the kitchen"])[0]
    docs = tuned.embed([d for _, d in pairs[:4]])
    assert int(np.argmax(docs @ q)) == 3


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
