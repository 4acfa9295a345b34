"""Moving a saved KV span to other positions without llama.cpp's shift: rewrite its cell positions and rotate its keys
in the sequence state itself (numpy), so the span is restored where it lands and the next decode runs no K-shift.

Why: `llama_memory_seq_add` marks cells as shifted and the next `llama_decode` first runs `build_graph_shift`, which
applies RoPE to the keys of *every* cell of the cache (a view over the whole K tensor of each layer), not only the
shifted ones — with 16,384 cells that made a 26-token decode after one shift 314 ms instead of 75 ms on this project's
2-core machine (docs/history.md, KV blocks). A span is a few dozen cells: its load, rotation included, takes under a millisecond.

RoPE by a position delta: R(p + d) = R(d) R(p) for each rotated pair, so a key computed at p is moved to p + d by
rotating each pair (x0, x1) by theta_i = freq_scale * d * base^(-2i / n_rot) — NEOX pairs are (i, i + n_rot/2), NORM
pairs (2i, 2i + 1). Computed the way ggml's CPU kernel does it (`rope_angles`, `rotate_keys`), stored back as f16.

The state (`llama_state_seq_get_data`, llama.cpp's llama-context.cpp / llama-kv-cache.cpp): u32 magic, i32 seq id,
then per KV cache (an interleaved-SWA model writes its global-attention cache, then its SWA cache): u32 n_stream;
per stream u32 cell_count and, if nonzero, per cell {i32 pos, u32 n_seq_id, i32 seq_id x n_seq_id}, then u32 v_trans,
u32 n_layer, per layer {i32 k_type, u64 k_row_size, rows}, then V (rows per layer, or per layer {i32 type, u32
element size, u32 n_embd_v_gqa, elements} when transposed). Anything else — another key type, M-RoPE, YaRN, a size
that does not add up — is refused with `StateFormatError`, and the caller falls back to llama.cpp's `seq_add`.

>>> params = RopeParams("neox", n_rot=4, head_dim=4, n_head_kv=1, freq_base=(1e4,), freq_scale=(1.0,))
>>> span = build_state([7, 8], [np.ones((2, 4), np.float16)], params)
>>> parse_state(shift_state(span, 3, params), params).positions
[10, 11]
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from nexus.errors import ModelError

STATE_MAGIC = 0xAF143CD8    # llama-context.cpp io_magic, first u32 of a sequence state
GGML_TYPE_F16 = 1
ROPE_TYPES = {0: "norm", 2: "neox"}  # llama_rope_type; -1 (none) needs no rotation; M-RoPE / vision are refused


class StateFormatError(ModelError):
    """A saved KV span this module cannot move safely (unknown layout or key type, M-RoPE, sizes that do not add up);
    the caller shifts it with llama.cpp instead."""


@dataclass(frozen=True)
class RopeParams:
    """What rotating a span's keys needs, per KV cache of the state, in the order the state writes them: for an
    interleaved-SWA model (Gemma 3) the global-attention cache, then the sliding-window one."""

    rope: str                         # "neox" | "norm" | "none"
    n_rot: int                        # rotated dimensions at the start of each head
    head_dim: int                     # key dimensions per head
    n_head_kv: int
    freq_base: tuple[float, ...]      # one per KV cache
    freq_scale: tuple[float, ...]     # one per KV cache

    def __post_init__(self) -> None:
        if self.rope not in ("neox", "norm", "none"):
            raise StateFormatError(f"RoPE type {self.rope!r} cannot be re-rotated here")
        if self.rope != "none" and (self.n_rot <= 0 or self.n_rot % 2 or self.n_rot > self.head_dim):
            raise StateFormatError(f"n_rot {self.n_rot} does not fit a {self.head_dim}-dimension head")
        if len(self.freq_base) != len(self.freq_scale) or not self.freq_base:
            raise StateFormatError("one RoPE base and scale per KV cache are needed")

    @property
    def k_row_bytes(self) -> int:
        return self.n_head_kv * self.head_dim * 2  # f16


@dataclass
class ParsedState:
    """Where a span state's positions and key rows sit in its bytes (offsets into the buffer)."""

    pos_offsets: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    # (cache index, byte offset, cell count) of each layer's K rows
    k_blocks: list[tuple[int, int, int]] = field(default_factory=list)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise StateFormatError(f"state ends at byte {len(self.data)}, inside a field at {self.at}")
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return value

    def skip(self, n: int) -> int:
        if n < 0 or self.at + n > len(self.data):
            raise StateFormatError(f"state ends at byte {len(self.data)}; {n} more bytes expected at {self.at}")
        start, self.at = self.at, self.at + n
        return start


def parse_state(data: bytes, params: RopeParams) -> ParsedState:
    """Locate the positions and f16 key rows of a one-sequence state saved by `llama_state_seq_get_data`."""
    r, out = _Reader(data), ParsedState()
    if r.take("<I") != STATE_MAGIC:
        raise StateFormatError("not a llama.cpp sequence state (magic differs)")
    r.take("<i")
    for cache in range(len(params.freq_base)):
        n_stream = r.take("<I")
        if not 1 <= n_stream <= 64:
            raise StateFormatError(f"KV cache {cache}: implausible stream count {n_stream}")
        for _ in range(n_stream):
            cells = r.take("<I")
            if cells == 0:
                continue
            for _ in range(cells):
                out.pos_offsets.append(r.at)
                out.positions.append(r.take("<i"))
                if r.take("<I") != 1:
                    raise StateFormatError("a cell of the span belongs to several sequences (or has an extension)")
                r.take("<i")
            v_trans, n_layer = r.take("<I"), r.take("<I")
            if v_trans not in (0, 1) or not 0 < n_layer <= 1024:
                raise StateFormatError(f"KV cache {cache}: v_trans {v_trans}, n_layer {n_layer} do not parse")
            for _ in range(n_layer):
                k_type, row = r.take("<i"), r.take("<Q")
                if k_type != GGML_TYPE_F16:
                    raise StateFormatError(f"key type {k_type} (only f16 keys, ggml type 1, are rotated here)")
                if row != params.k_row_bytes:
                    raise StateFormatError(f"key rows of {row} bytes, expected {params.k_row_bytes} "
                                           f"({params.n_head_kv} heads x {params.head_dim} f16)")
                out.k_blocks.append((cache, r.skip(cells * row), cells))
            for _ in range(n_layer):
                r.take("<i")
                if v_trans:
                    element, width = r.take("<I"), r.take("<I")
                    r.skip(element * width * cells)
                else:
                    r.skip(r.take("<Q") * cells)
    if r.at != len(data):
        raise StateFormatError(f"{len(data) - r.at} bytes left after the last KV cache ({len(params.freq_base)} expected)")
    return out


@lru_cache(maxsize=4096)
def rope_angles(delta: int, n_rot: int, freq_base: float, freq_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of each pair's angle for a move by `delta`, as ggml's CPU kernel computes them (float32: theta_0 =
    delta, theta_i = theta_(i-1) * base^(-2 / n_rot), each times freq_scale; cos and sin rounded to float32)."""
    step = np.float32(np.float64(freq_base) ** (-2.0 / n_rot))
    theta = np.cumprod(np.concatenate([[np.float32(delta)], np.full(n_rot // 2 - 1, step, np.float32)])).astype(np.float32)
    theta = (np.float32(freq_scale) * theta).astype(np.float64)
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    cos.setflags(write=False)
    sin.setflags(write=False)  # cached: shared by every later move by the same delta
    return cos, sin


def rotate_keys(keys: np.ndarray, delta: int, params: RopeParams, cache: int) -> np.ndarray:
    """f16 keys (cells, heads, head_dim) computed at p, as RoPE gives them at p + delta. Each output is one fused
    multiply-add in float32, as ggml's kernel is compiled (x0*cos exact in float64, minus float32(x1*sin), rounded
    once): on this project's build the result is bit-identical to llama.cpp's own shift (tests/llm/test_rope.py)."""
    if params.rope == "none" or delta == 0:
        return keys
    half = params.n_rot // 2
    cos, sin = rope_angles(delta, params.n_rot, params.freq_base[cache], params.freq_scale[cache])
    if params.rope == "neox":
        first, second = slice(0, half), slice(half, params.n_rot)
    else:
        first, second = slice(0, params.n_rot, 2), slice(1, params.n_rot, 2)
    # an f16 value times a float32 one is exact in float64, so x0 goes to float64 straight from f16
    x0, x1 = keys[..., first].astype(np.float64), keys[..., second].astype(np.float32)
    out = keys.astype(np.float16)  # a copy; unrotated dimensions stay as they are
    out[..., first] = (x0 * cos - (x1 * sin).astype(np.float64)).astype(np.float32)
    out[..., second] = (x0 * sin + (x1 * cos).astype(np.float64)).astype(np.float32)
    return out


def shift_state(data: bytes, delta: int, params: RopeParams) -> bytes:
    """The span state `data` moved by `delta` positions: every cell's position + delta, every key re-rotated; values
    and everything else unchanged. Raises `StateFormatError` for a state it cannot parse. The key rows of every layer
    of one cache share their angles, so they are gathered and rotated in one call (numpy's per-call cost had made a
    30-token span of Gemma 3 take ~0.9 ms in 18 small rotations)."""
    parsed = parse_state(data, params)
    if delta == 0:
        return data
    if min(parsed.positions, default=0) + delta < 0:
        raise StateFormatError(f"a shift by {delta} would move position {min(parsed.positions)} below 0")
    buf = bytearray(data)
    for offset, pos in zip(parsed.pos_offsets, parsed.positions):
        struct.pack_into("<i", buf, offset, pos + delta)
    for cache in sorted({c for c, _, _ in parsed.k_blocks}):
        blocks = [(offset, cells * params.k_row_bytes) for c, offset, cells in parsed.k_blocks if c == cache]
        keys = np.concatenate([np.frombuffer(data, np.uint8, n, offset) for offset, n in blocks]).view(np.float16)
        rotated = rotate_keys(keys.reshape(-1, params.n_head_kv, params.head_dim), delta, params, cache).tobytes()
        at = 0
        for offset, n in blocks:
            buf[offset:offset + n] = rotated[at:at + n]
            at += n
    return bytes(buf)


def build_state(positions: list[int], layer_keys: list[np.ndarray], params: RopeParams, seq: int = 0) -> bytes:
    """A state of one cache (one stream, V untransposed and zero) in llama.cpp's layout, for tests and examples:
    `layer_keys` one (cells, n_head_kv * head_dim) f16 array per layer."""
    cells = len(positions)
    out = [struct.pack("<Ii", STATE_MAGIC, seq)]
    for _ in params.freq_base:
        out.append(struct.pack("<II", 1, cells))
        out += [struct.pack("<iIi", p, 1, seq) for p in positions]
        out.append(struct.pack("<II", 0, len(layer_keys)))
        for keys in layer_keys:
            out += [struct.pack("<iQ", GGML_TYPE_F16, params.k_row_bytes), np.asarray(keys, np.float16).tobytes()]
        for _ in layer_keys:
            out += [struct.pack("<iQ", GGML_TYPE_F16, params.k_row_bytes), bytes(cells * params.k_row_bytes)]
    return b"".join(out)
