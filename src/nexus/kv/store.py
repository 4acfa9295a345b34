"""Compiled KV blocks on disk: a versioned header and a checksummed payload, written atomically, kept within
a byte budget by evicting the least recently used block.

Layout of one block file: MAGIC | u64 header length | header JSON | payload (llama.cpp sequence state).
A block is keyed by (model file hash, prompt template version, tool content hash, anchor position) plus
the KV layout it was saved from; `load` refuses a block whose header does not match the key it was asked
for, whose payload is shorter or longer than the header says, or whose checksum differs — the caller then
prefills the tokens instead (and the bad file is removed, with the reason logged).

>>> import tempfile; store = BlockStore(Path(tempfile.mkdtemp()), budget_bytes=1 << 20)
>>> key = BlockKey("m" * 64, "t" * 64, "c" * 64, 12, "fa1")
>>> _ = store.save(Block(key, (5, 6, 7), b"state")); store.get(key).tokens
(5, 6, 7)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path

from nexus.errors import NexusError
from nexus.slb.store import atomic_write

log = logging.getLogger(__name__)

MAGIC = b"NXKVB\x00\x00\x01"
FORMAT_VERSION = 1
SUFFIX = ".kvb"


class BlockFileError(NexusError):
    """A stored KV block is corrupt, truncated or was compiled for another model, template or tool."""


@dataclass(frozen=True)
class BlockKey:
    """What a block's KV depends on; any change means another block."""

    model_hash: str        # sha256 of the GGUF file
    template: str          # sha256 of the prefix tokens the block was computed behind (prompt template version)
    content: str           # sha256 of the block's text (the rendered tool line: name, description, schema)
    anchor: int            # position of the block's first token when it was compiled
    layout: str = ""       # KV layout of the context (flash attention: V not transposed), part of the state format

    def file_name(self) -> str:
        raw = json.dumps(asdict(self), sort_keys=True).encode("utf-8")
        return hashlib.sha256(raw).hexdigest()[:40] + SUFFIX


@dataclass(frozen=True)
class Block:
    """One compiled block: its tokens (positions anchor..anchor+n-1) and llama.cpp's state of those positions."""

    key: BlockKey
    tokens: tuple[int, ...]
    payload: bytes

    @property
    def anchor(self) -> int:
        return self.key.anchor

    def __len__(self) -> int:
        return len(self.tokens)


def encode_block(block: Block) -> list[bytes]:
    header = {"format_version": FORMAT_VERSION, "key": asdict(block.key), "tokens": list(block.tokens),
              "payload_bytes": len(block.payload), "payload_sha256": hashlib.sha256(block.payload).hexdigest(),
              "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    blob = json.dumps(header).encode("utf-8")
    return [MAGIC, struct.pack("<Q", len(blob)), blob, block.payload]


def decode_block(data: bytes, expected: BlockKey | None = None, where: str = "block") -> Block:
    """Parse and verify one block file's bytes; BlockFileError says what is wrong."""
    if len(data) < len(MAGIC) + 8 or data[: len(MAGIC)] != MAGIC:
        raise BlockFileError(f"{where}: not a Nexus KV block (bad magic) or written by another format version")
    (length,) = struct.unpack("<Q", data[len(MAGIC): len(MAGIC) + 8])
    start = len(MAGIC) + 8
    if start + length > len(data):
        raise BlockFileError(f"{where}: truncated header ({len(data)} bytes, header says {length})")
    try:
        header = json.loads(data[start: start + length].decode("utf-8"))
        key = BlockKey(**header["key"])
        tokens = tuple(int(t) for t in header["tokens"])
        size, checksum = int(header["payload_bytes"]), str(header["payload_sha256"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise BlockFileError(f"{where}: unreadable header ({exc})") from None
    if header.get("format_version") != FORMAT_VERSION:
        raise BlockFileError(f"{where}: format version {header.get('format_version')} != {FORMAT_VERSION}")
    if expected is not None and key != expected:
        fields = [f for f in ("model_hash", "template", "content", "anchor", "layout")
                  if getattr(key, f) != getattr(expected, f)]
        raise BlockFileError(f"{where}: compiled for another {', '.join(fields)} (mismatched block)")
    payload = data[start + length:]
    if len(payload) != size:
        raise BlockFileError(f"{where}: payload is {len(payload)} bytes, header says {size} (truncated or padded)")
    if hashlib.sha256(payload).hexdigest() != checksum:
        raise BlockFileError(f"{where}: payload checksum mismatch (file corrupt)")
    return Block(key, tokens, payload)


class BlockStore:
    """A folder of blocks within `budget_bytes` (least recently used evicted first), with the most recently used
    blocks also kept in memory (`memory_bytes`) so a warm turn reads no file."""

    def __init__(self, folder: Path, budget_bytes: int = 512 << 20, memory_bytes: int = 128 << 20):
        self.folder = Path(folder)
        self.budget_bytes, self.memory_bytes = budget_bytes, memory_bytes
        self._memory: OrderedDict[BlockKey, Block] = OrderedDict()
        self._memory_used = 0
        self.refusals: list[str] = []          # reasons of refused blocks, newest last (also logged)

    def path(self, key: BlockKey) -> Path:
        return self.folder / key.file_name()

    def _remember(self, block: Block) -> None:
        if block.key in self._memory:
            self._memory.move_to_end(block.key)
            return
        self._memory[block.key] = block
        self._memory_used += len(block.payload)
        while self._memory_used > self.memory_bytes and len(self._memory) > 1:
            _, old = self._memory.popitem(last=False)
            self._memory_used -= len(old.payload)

    def save(self, block: Block) -> Path:
        path = self.path(block.key)
        atomic_write(path, encode_block(block))
        self._remember(block)
        self.evict()
        return path

    def load(self, key: BlockKey) -> Block | None:
        """The block for `key` (None when there is none); BlockFileError when the file is bad."""
        block = self._memory.get(key)
        if block is not None:
            self._memory.move_to_end(key)
            return block
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        block = decode_block(data, key, str(path))
        os.utime(path)  # the file's mtime is its last use: eviction order survives restarts
        self._remember(block)
        return block

    def get(self, key: BlockKey) -> Block | None:
        """`load`, but a bad block is refused: logged, removed, and reported as missing (the caller prefills)."""
        try:
            return self.load(key)
        except BlockFileError as exc:
            self.refusals.append(str(exc))
            log.warning("KV block refused, prefilling instead: %s", exc)
            self.path(key).unlink(missing_ok=True)
            return None

    def forget(self, key: BlockKey) -> None:
        """Drop the in-memory copy (the next `load` reads and verifies the file)."""
        block = self._memory.pop(key, None)
        if block is not None:
            self._memory_used -= len(block.payload)

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("*" + SUFFIX)) if self.folder.is_dir() else []

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files())

    def evict(self) -> list[Path]:
        """Remove the least recently used files until the folder fits the budget; returns what was removed."""
        entries = []
        for p in self.files():
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            entries.append((st.st_mtime_ns, st.st_size, p))
        total = sum(size for _, size, _ in entries)
        removed = []
        for _, size, p in sorted(entries):
            if total <= self.budget_bytes:
                break
            p.unlink(missing_ok=True)
            total -= size
            removed.append(p)
        if removed:
            gone = {p.name for p in removed}
            for key in [k for k in self._memory if k.file_name() in gone]:
                self.forget(key)
            log.info("KV store over its %d-byte budget: evicted %d least recently used blocks", self.budget_bytes, len(removed))
        return removed
