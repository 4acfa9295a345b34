import logging

import numpy as np
import pytest

from nexus.errors import IndexFileError
from nexus.registry import Registry, Tool
from nexus.slb import HashEmbedder, SemanticLookasideBuffer
from nexus.slb.store import load_index

OBJ = {"type": "object", "properties": {}}


def registry_of(n=40, prefix="tool"):
    registry = Registry()
    registry.set_source("s", [Tool(f"{prefix}_{i}", f"does thing number {i} with widget{i}", OBJ, "s") for i in range(n)])
    return registry


def test_sync_is_incremental():
    registry = registry_of()
    slb = SemanticLookasideBuffer(HashEmbedder())
    assert slb.sync(registry).embedded == 40
    tools = [registry.get(k) for k in registry.keys()]
    tools[3] = Tool(tools[3].name, "a completely new description", OBJ, "s")
    registry.set_source("s", tools[:-1])
    stats = slb.sync(registry)
    assert (stats.embedded, stats.reused, stats.removed) == (1, 38, 2)
    assert len(slb) == 39 and "tool_39" not in slb.keys


def test_search_names_and_lexical_channel():
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry_of())
    hits = slb.search("please run tool_17 now", k=5)
    assert hits[0].key == "tool_17" and hits[0].lexical > 0.9
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_plain_word_names_get_no_exact_match_bonus():
    registry = Registry()
    registry.set_source("s", [Tool("search", "find documents", OBJ, "s"), Tool("weather.get", "forecast", OBJ, "s")])
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    bonus = slb._lexical.name_matches("search the weather.get tool")
    assert bonus.tolist() == [0.0, 1.0]


def test_persistence_round_trip(tmp_path):
    path = tmp_path / "slb.idx"
    registry = registry_of()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    slb.save(path)
    loaded = SemanticLookasideBuffer(HashEmbedder())
    loaded.load(path)
    assert loaded.keys == slb.keys and np.array_equal(loaded.codes, slb.codes)
    base = loaded.codes
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)  # the table is read through a memory map, not copied into RAM
    assert loaded.search("widget7", k=1)[0].key == slb.search("widget7", k=1)[0].key
    assert loaded.sync(registry).embedded == 0  # nothing to re-embed after a load


def test_corrupt_file_is_detected_and_rebuilt(tmp_path, caplog):
    path = tmp_path / "slb.idx"
    registry = registry_of()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    slb.save(path)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(IndexFileError, match="checksum"):
        load_index(path)
    fresh = SemanticLookasideBuffer(HashEmbedder())
    with caplog.at_level(logging.WARNING):
        stats = fresh.open(path, registry)
    assert "rebuilding" in caplog.text and stats.embedded == 40
    load_index(path)  # rewritten, valid again


@pytest.mark.parametrize("damage", [lambda b: b[:20], lambda b: b"garbage" + b[7:], lambda b: b[:-100]])
def test_truncated_or_foreign_files_are_refused(tmp_path, damage):
    path = tmp_path / "slb.idx"
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry_of())
    slb.save(path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(IndexFileError):
        SemanticLookasideBuffer(HashEmbedder()).load(path)


def test_embedder_mismatch_is_refused(tmp_path):
    path = tmp_path / "slb.idx"
    slb = SemanticLookasideBuffer(HashEmbedder(64))
    slb.sync(registry_of())
    slb.save(path)
    with pytest.raises(IndexFileError, match="embedder"):
        SemanticLookasideBuffer(HashEmbedder(32)).load(path)


def test_real_minilm_routes_and_int8_matches_fp32(minilm):
    registry = Registry()
    registry.set_source("s", [
        Tool("get_current_time", "Get the current time in a given IANA timezone", OBJ, "s"),
        Tool("git_commit", "Record changes to the git repository with a message", OBJ, "s"),
        Tool("read_query", "Execute a SELECT query on the SQLite database", OBJ, "s"),
        Tool("create_entities", "Create entities in the knowledge graph memory", OBJ, "s"),
    ])
    slb = SemanticLookasideBuffer(minilm, keep_fp32=True)
    slb.sync(registry)
    expected = {"what time is it in Tokyo right now?": "get_current_time",
                "commit my staged changes saying 'fix typo'": "git_commit",
                "select all rows from the users table": "read_query"}
    for query, tool in expected.items():
        assert slb.search(query, k=1)[0].key == tool
        vec = minilm.embed([query])[0]
        assert np.max(np.abs(slb.scores(query, vec) - slb.scores(query, vec, precision="fp32"))) < 0.01


def test_forget_queries_makes_the_next_lookup_embed_again():
    class Counting(HashEmbedder):
        calls = 0

        def embed(self, texts):
            Counting.calls += len(texts)
            return super().embed(texts)

    slb = SemanticLookasideBuffer(Counting())
    slb.sync(registry_of())
    Counting.calls = 0   # the tool texts are embedded by sync
    slb.search("tool 3 please")
    slb.search("tool 3 please")
    assert Counting.calls == 1
    slb.forget_queries()
    slb.search("tool 3 please")
    assert Counting.calls == 2


def test_a_full_query_memo_never_drops_a_text_it_is_about_to_return(monkeypatch):
    """The oldest remembered text, asked again beside a new one when the memo is full, comes back (it was evicted
    between the lookup and the answer: a KeyError on a long benchmark run) and is then the newest."""
    import nexus.slb.index as index

    monkeypatch.setattr(index, "QUERY_MEMO", 3)
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry_of())
    for text in ("a", "b", "c"):
        slb.embed_queries([text])
    vectors = slb.embed_queries(["a", "new one", "a"])
    assert np.allclose(vectors[0], HashEmbedder().embed(["a"])[0]) and np.allclose(vectors[0], vectors[2])
    assert list(slb._queries) == ["c", "a", "new one"]


def test_bfloat16_embeddings_agree_with_float32_and_are_never_mixed_with_them(minilm):
    """The embedder's bf16 compute (`NEXUS_EMBEDDER_PRECISION`) keeps the vectors and the ranking; an SLB that
    adopts float32 rows embeds them again at bf16 rather than mixing the two in one table."""
    from nexus.slb import SentenceTransformerEmbedder

    bf16 = SentenceTransformerEmbedder(precision="bfloat16")
    assert bf16.precision == "bfloat16" and bf16.id == minilm.id  # the same model: a gate calibrated on it still fits
    texts = ["what time is it in Tokyo right now?", "Record changes to the git repository with a message",
             "select all rows from the users table", "Thanks, that's all for today!"]
    a, b = minilm.embed(texts), bf16.embed(texts)
    assert b.dtype == np.float32 and b.shape == a.shape
    assert float((a * b).sum(1).min()) >= 0.99
    registry = Registry()
    registry.set_source("s", [Tool("get_current_time", "Get the current time in a given IANA timezone", OBJ, "s"),
                              Tool("git_commit", "Record changes to the git repository with a message", OBJ, "s"),
                              Tool("read_query", "Execute a SELECT query on the SQLite database", OBJ, "s")])
    fp32_slb = SemanticLookasideBuffer(minilm)
    fp32_slb.sync(registry)
    slb = SemanticLookasideBuffer(bf16)
    slb.adopt_rows(fp32_slb)
    assert slb.sync(registry).embedded == 3
    for query in texts[:3]:
        assert [h.key for h in slb.search(query, k=3)] == [h.key for h in fp32_slb.search(query, k=3)]


def test_an_unknown_embedder_precision_is_refused():
    from nexus.errors import ModelError
    from nexus.slb.embedders import resolve_precision

    with pytest.raises(ModelError, match="precision must be one of"):
        resolve_precision("fp8")
    assert resolve_precision("float32") == "float32"


@pytest.mark.parametrize("avx512_bf16, amx, auto", [(False, False, "float32"), (True, False, "bfloat16"),
                                                    (False, True, "bfloat16")])
def test_auto_precision_is_bfloat16_only_where_an_x86_cpu_has_it_in_hardware(monkeypatch, avx512_bf16, amx, auto):
    """oneDNN says bf16 is supported on every AVX-512 CPU, where it emulates it at half float32's speed: `auto` asks
    torch's CPU probe for AVX512-BF16 or AMX instead."""
    import platform

    import torch

    from nexus.slb.embedders import resolve_precision

    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    assert resolve_precision("auto") == auto
