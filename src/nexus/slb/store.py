"""On-disk format of the SLB: versioned JSON header + checksummed int8 payload, written atomically.

Layout: MAGIC | u64 header length | header JSON | zero padding to 64 | scales f32[n] | codes int8[n, d]
(scales first so they stay 4-byte aligned inside the memory map)
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from nexus.errors import IndexFileError

MAGIC = b"NXSLB\x00\x00\x01"
FORMAT_VERSION = 1
ALIGN = 64


@dataclass(frozen=True)
class StoredIndex:
    header: dict[str, Any]
    codes: np.ndarray
    scales: np.ndarray


@lru_cache(maxsize=16)
def _cached_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_sha256(path: str | Path) -> str:
    """sha256 of a file, read in chunks; computed once per process and file version (path, size, mtime), so model
    files checked on every load are not re-read."""
    st = Path(path).stat()
    return _cached_sha256(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def _payload_offset(header_bytes: int) -> int:
    start = len(MAGIC) + 8 + header_bytes
    return (start + ALIGN - 1) // ALIGN * ALIGN


def atomic_write(path: Path, chunks: list[bytes]) -> None:
    """Write to a temp file in the same folder, fsync, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_index(path: Path, header: dict[str, Any], codes: np.ndarray, scales: np.ndarray) -> None:
    codes = np.ascontiguousarray(codes, dtype=np.int8)
    scales = np.ascontiguousarray(scales, dtype=np.float32)
    payload = scales.tobytes() + codes.tobytes()
    header = dict(header, format_version=FORMAT_VERSION, n=int(codes.shape[0]), dim=int(codes.shape[1]),
                  payload_sha256=hashlib.sha256(payload).hexdigest())
    blob = json.dumps(header, ensure_ascii=False).encode("utf-8")
    pad = _payload_offset(len(blob)) - (len(MAGIC) + 8 + len(blob))
    atomic_write(path, [MAGIC, struct.pack("<Q", len(blob)), blob, b"\0" * pad, payload])


def load_index(path: Path) -> StoredIndex:
    """Memory-map an index file; raise IndexFileError on any sign of corruption."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            magic = handle.read(len(MAGIC))
            if magic != MAGIC:
                raise IndexFileError(f"{path}: not a Nexus SLB file (bad magic) or written by another format version")
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > size:
                raise IndexFileError(f"{path}: header length {length} exceeds file size {size}")
            header = json.loads(handle.read(length).decode("utf-8"))
    except (OSError, struct.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexFileError(f"{path}: unreadable index header: {exc}") from None
    if header.get("format_version") != FORMAT_VERSION:
        raise IndexFileError(f"{path}: format version {header.get('format_version')} != {FORMAT_VERSION}")
    n, dim = int(header["n"]), int(header["dim"])
    offset = _payload_offset(length)
    if size != offset + n * dim + 4 * n:
        raise IndexFileError(f"{path}: truncated or padded payload ({size} bytes, expected {offset + n * dim + 4 * n})")
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(n * dim + 4 * n,)) if n else np.zeros(0, np.uint8)
    if hashlib.sha256(raw).hexdigest() != header.get("payload_sha256"):
        raise IndexFileError(f"{path}: payload checksum mismatch (file corrupt)")
    scales = raw[: 4 * n].view(np.float32)
    codes = raw[4 * n:].view(np.int8).reshape(n, dim)
    return StoredIndex(header=header, codes=codes, scales=scales)
