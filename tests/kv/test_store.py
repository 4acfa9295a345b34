"""Block files: round trip, refusal of corrupt / truncated / mismatched blocks, byte budget with LRU eviction."""

import os

import pytest

from nexus.kv.store import Block, BlockFileError, BlockKey, BlockStore


def key(content: str = "c", anchor: int = 100) -> BlockKey:
    return BlockKey("m" * 64, "t" * 64, content * 64, anchor, "fa1")


def test_round_trip_from_disk(tmp_path):
    store = BlockStore(tmp_path)
    block = Block(key(), (1, 2, 3), bytes(range(256)) * 10)
    path = store.save(block)
    assert path.is_file()
    fresh = BlockStore(tmp_path)  # nothing in memory: read and verify the file
    loaded = fresh.load(key())
    assert loaded == block and loaded.anchor == 100 and len(loaded) == 3
    assert fresh.load(key("d")) is None


@pytest.mark.parametrize("damage, reason", [
    (lambda b: b[:-7], "truncated"),
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum"),
    (lambda b: b"garbage" + b[7:], "bad magic"),
    (lambda b: b[:20], "truncated header"),
])
def test_corrupt_blocks_are_refused_and_removed(tmp_path, damage, reason, caplog):
    store = BlockStore(tmp_path)
    path = store.save(Block(key(), (1, 2, 3), b"x" * 1000))
    path.write_bytes(damage(path.read_bytes()))
    fresh = BlockStore(tmp_path)
    with pytest.raises(BlockFileError, match=reason):
        fresh.load(key())
    assert fresh.get(key()) is None  # refused: the caller prefills
    assert reason in fresh.refusals[-1] and reason in caplog.text
    assert not path.exists()


def test_mismatched_block_is_refused(tmp_path):
    store = BlockStore(tmp_path)
    path = store.save(Block(key(), (1,), b"x"))
    other = BlockKey("n" * 64, "t" * 64, "c" * 64, 100, "fa1")  # another model file
    os.replace(path, store.path(other))  # a file under the wrong name, e.g. copied between caches
    with pytest.raises(BlockFileError, match="model_hash"):
        BlockStore(tmp_path).load(other)


def test_budget_evicts_least_recently_used(tmp_path):
    blocks = [Block(key(c), (1,), b"x" * 1000) for c in "abc"]
    size = BlockStore(tmp_path / "probe").save(blocks[0]).stat().st_size
    store = BlockStore(tmp_path, budget_bytes=int(2.5 * size), memory_bytes=0)  # room for two blocks
    store.save(blocks[0])
    store.save(blocks[1])
    os.utime(store.path(blocks[1].key), ns=(1, 1))  # b is the oldest now
    os.utime(store.path(blocks[0].key), ns=(2, 2))
    store.save(blocks[2])
    assert store.size_bytes() <= 2.5 * size
    assert store.load(blocks[1].key) is None
    assert store.load(blocks[0].key) == blocks[0] and store.load(blocks[2].key) == blocks[2]
