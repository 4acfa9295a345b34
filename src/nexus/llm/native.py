"""Thin, resource-owning wrappers over llama.cpp's C API (via `llama_cpp`'s raw bindings).

The project owns the context: explicit token positions and sequence ids, a unified KV buffer shared by
`n_seq_max` sequences, and for sliding-window models a full-size SWA cache, so that prefixes can be
trimmed, copied, shifted, saved and restored per sequence (`seq_rm`, `seq_cp`, `seq_add`,
`seq_state`/`set_seq_state`). Every native handle is freed by `close()` (also on `with` exit), the context
before its model.

>>> from nexus.llm.native import GGUFModel, KVContext  # doctest: +SKIP
>>> with GGUFModel("model.gguf") as model, KVContext(model, n_ctx=4096) as ctx:  # doctest: +SKIP
...     tokens = model.tokenize("Hello", add_bos=True)
...     ctx.decode(tokens, seq=0, pos=0)
...     int(ctx.logits().argmax())
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nexus.errors import GrammarError, ModelError
from nexus.llm.base import unit_bounds
from nexus.llm.rope import ROPE_TYPES, RopeParams, StateFormatError, shift_state

log = logging.getLogger(__name__)
# Architectures whose sliding-window layers use llama.cpp's hparams default RoPE base (10000) when the file has no
# `<arch>.rope.freq_base_swa` (llama.cpp's models/gemma3.cpp reads the key only if present); others are refused
SWA_BASE_DEFAULT = {"gemma3": 10000.0}


def _lib():
    import llama_cpp

    return llama_cpp


def route_native_logs() -> None:
    """Send llama.cpp's own log lines to the `nexus.llm.llama_cpp` logger (DEBUG; ERROR lines at ERROR)
    instead of stderr, once per process (ggml levels: 4 is ERROR; the rest is chatter)."""
    L = _lib()
    if getattr(route_native_logs, "callback", None) is not None:
        return
    native = logging.getLogger("nexus.llm.llama_cpp")

    @L.llama_log_callback
    def to_logging(level: int, text: bytes, user_data: object) -> None:
        native.log(logging.ERROR if level == 4 else logging.DEBUG, "%s", text.decode("utf-8", "replace").rstrip())

    route_native_logs.callback = to_logging  # the C side keeps only a pointer: keep the object alive
    L.llama_log_set(to_logging, ctypes.c_void_p(0))


def cpu_reports_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU flags (`/proc/cpuinfo`, or the text given) list Intel AMX tiles.

    >>> cpu_reports_amx("flags : fpu avx2 amx_tile amx_int8"), cpu_reports_amx("flags : fpu avx2")
    (True, False)
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return any(line.startswith("flags") and "amx_tile" in line.split() for line in cpuinfo.splitlines())


class GGUFModel:
    """A loaded GGUF model: weights, vocabulary, metadata.

    `extra_buffers`: llama.cpp's extra weight layouts (AMX tiles, repacked CPU blocks); None: on unless the CPU
    reports AMX. On a Xeon VM that lists `amx_tile` (and grants the AMX permission) the first decode died with
    SIGILL at `tileloadd` in libggml-cpu: the hypervisor does not keep the tile state. The plain CPU kernels
    (AVX-512 there) run everywhere."""

    def __init__(self, path: str | Path, *, n_gpu_layers: int = 0, verbose: bool = False,
                 extra_buffers: bool | None = None):
        L = _lib()
        if not verbose:
            route_native_logs()
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"GGUF model {path} not found; set NEXUS_LLM_MODEL to a .gguf file")
        L.llama_backend_init()
        params = L.llama_model_default_params()
        params.n_gpu_layers = n_gpu_layers
        params.use_extra_bufts = not cpu_reports_amx() if extra_buffers is None else extra_buffers
        self.path = path
        self.ptr = L.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not self.ptr:
            raise ModelError(f"llama.cpp could not load {path} (not a GGUF model, or an unsupported architecture)")
        self.vocab = L.llama_model_get_vocab(self.ptr)
        self.n_vocab = int(L.llama_vocab_n_tokens(self.vocab))
        self.n_ctx_train = int(L.llama_model_n_ctx_train(self.ptr))
        self.n_swa = int(L.llama_model_n_swa(self.ptr))
        self.bos = int(L.llama_vocab_bos(self.vocab))
        self.add_bos = bool(L.llama_vocab_get_add_bos(self.vocab))
        self._contexts: list[KVContext] = []

    # -- vocabulary --------------------------------------------------------------------------------
    def tokenize(self, text: str, *, add_bos: bool = False, special: bool = False) -> list[int]:
        L = _lib()
        data = text.encode("utf-8")
        room = len(data) + 8
        buf = (L.llama_token * room)()
        n = L.llama_tokenize(self.vocab, data, len(data), buf, room, add_bos, special)
        if n < 0:  # more tokens than bytes cannot happen for BPE/SPM, but the API allows it
            room = -n
            buf = (L.llama_token * room)()
            n = L.llama_tokenize(self.vocab, data, len(data), buf, room, add_bos, special)
        return list(buf[:n])

    def piece(self, token: int, special: bool = False) -> bytes:
        L = _lib()
        buf = ctypes.create_string_buffer(128)
        n = L.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        return buf.raw[: max(n, 0)]

    def is_eog(self, token: int) -> bool:
        return bool(_lib().llama_vocab_is_eog(self.vocab, token))

    def chat_template(self) -> str | None:
        raw = _lib().llama_model_chat_template(self.ptr, None)
        return raw.decode("utf-8") if raw else None

    def description(self) -> str:
        buf = ctypes.create_string_buffer(256)
        _lib().llama_model_desc(self.ptr, buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def meta(self, key: str) -> str | None:
        """A GGUF metadata value as text (None when the file has no such key)."""
        buf = ctypes.create_string_buffer(256)
        n = _lib().llama_model_meta_val_str(self.ptr, key.encode("utf-8"), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def rope_params(self) -> RopeParams:
        """The RoPE constants llama.cpp's own K-shift uses for this model, per KV cache of a sequence state (an
        interleaved-SWA model writes its global-attention cache, then its sliding-window one), for re-rotating saved
        spans (`nexus.llm.rope`). Raises `StateFormatError` where they cannot be read safely."""
        L = _lib()
        arch = self.meta("general.architecture") or ""
        rope_type = int(L.llama_model_rope_type(self.ptr))
        if rope_type != -1 and rope_type not in ROPE_TYPES:
            raise StateFormatError(f"{arch}: RoPE type {rope_type} (M-RoPE or vision) is not re-rotated here")
        scaling = self.meta(f"{arch}.rope.scaling.type")
        if scaling not in (None, "none", "linear"):
            raise StateFormatError(f"{arch}: RoPE scaling {scaling!r} (only none and linear are re-rotated here)")
        n_head = int(L.llama_model_n_head(self.ptr))
        head_dim = int(self.meta(f"{arch}.attention.key_length") or int(L.llama_model_n_embd(self.ptr)) // max(n_head, 1))
        n_rot = int(self.meta(f"{arch}.rope.dimension_count") or head_dim)
        # llama.cpp's defaults where the file is silent: base 10000 (llama_model::load_hparams), scale 1
        bases = [float(self.meta(f"{arch}.rope.freq_base") or 10000.0)]
        scales = [float(L.llama_model_rope_freq_scale_train(self.ptr))]
        if self.n_swa > 0:
            if self.meta(f"{arch}.rope.dimension_count_swa") not in (None, str(n_rot)):
                raise StateFormatError(f"{arch}: the sliding-window layers rotate another number of dimensions")
            swa_base = self.meta(f"{arch}.rope.freq_base_swa")
            if swa_base is None and arch not in SWA_BASE_DEFAULT:
                raise StateFormatError(f"{arch}: no {arch}.rope.freq_base_swa in the file, and which base llama.cpp "
                                       "then uses for its sliding-window layers is not known here")
            bases.append(float(swa_base or SWA_BASE_DEFAULT[arch]))
            scales.append(1.0)  # hparams.rope_freq_scale_train_swa: no architecture in SWA_BASE_DEFAULT reads one
        return RopeParams(ROPE_TYPES.get(rope_type, "none"), n_rot, head_dim, int(L.llama_model_n_head_kv(self.ptr)),
                          tuple(bases), tuple(scales))

    # -- lifetime ----------------------------------------------------------------------------------
    def close(self) -> None:
        for ctx in reversed(self._contexts):
            ctx.close()
        self._contexts.clear()
        if getattr(self, "ptr", None):
            _lib().llama_model_free(self.ptr)
            self.ptr = None

    def __enter__(self) -> "GGUFModel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class KVContext:
    """A llama.cpp context with explicit sequences and positions, and a record of what each sequence holds.

    `tokens(seq)` is the token list whose KV entries sit at positions 0..n-1 of that sequence; every
    method that changes the KV keeps the record true, so a prefix cache can be built on top of it.
    """

    def __init__(self, model: GGUFModel, *, n_ctx: int, n_seq_max: int = 2, n_batch: int = 512,
                 n_threads: int = 2, flash_attn: bool = False, pinned: int | None = None):
        L = _lib()
        if n_seq_max < 1:
            raise ModelError("n_seq_max must be >= 1")
        params = L.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        # `pinned`: every cell of that sequence is also owned by a hidden partner (one more sequence). llama.cpp's
        # SWA cache reuses a cell owned by one sequence once it slid out of that sequence's window (even with
        # swa_full), so the next tokens land in old cells, out of position order — and the order of the cells a
        # token attends to changes its result in the last bits (a prefix cache also wants those cells kept)
        self.pinned, self._partner = pinned, (n_seq_max if pinned is not None else None)
        params.n_seq_max = n_seq_max + int(pinned is not None)
        params.n_threads = n_threads
        params.n_threads_batch = n_threads
        params.kv_unified = True                      # every sequence may use the whole window
        params.swa_full = model.n_swa > 0             # keep every position so prefixes can be trimmed and reused
        params.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.model = model
        self.ptr = L.llama_init_from_model(model.ptr, params)
        if not self.ptr:
            raise ModelError(f"llama.cpp could not create a context of {n_ctx} tokens (out of memory?)")
        self.memory = L.llama_get_memory(self.ptr)
        self.n_ctx = int(L.llama_n_ctx(self.ptr))
        self.n_batch = n_batch
        self.n_seq_max = n_seq_max
        # what a saved sequence state depends on besides the model (flash attention stores V untransposed)
        self.layout = f"fa{int(flash_attn)}-swafull{int(params.swa_full)}"
        self._batch = L.llama_batch_init(n_batch, 0, n_seq_max + 1)
        self._tokens: dict[int, list[int]] = {seq: [] for seq in range(n_seq_max)}
        self._logits_ready, self._logits_seq = False, None
        self._rope: RopeParams | StateFormatError | None = None   # read from the model on the first shifted span
        self._shift_warned = False
        self.shifts = {"state": 0, "seq_add": 0}  # spans moved by `load_span`: in the state itself / by llama.cpp
        model._contexts.append(self)

    def tokens(self, seq: int) -> list[int]:
        return self._tokens[seq]

    def _owners(self, seq: int) -> tuple[int, ...]:
        """The llama.cpp sequences that own `seq`'s cells: itself, and its hidden partner when it is `pinned`
        (every KV operation on a pinned sequence is mirrored on the partner)."""
        return (seq, self._partner) if seq == self.pinned else (seq,)

    # -- decoding ----------------------------------------------------------------------------------
    def decode(self, tokens: Sequence[int], seq: int, pos: int, cuts: Sequence[int] = ()) -> None:
        """Append `tokens` to `seq` at positions pos.. (which must extend what the sequence holds);
        afterwards `logits()` gives the distribution after the last token. A new batch starts at every
        position in `cuts` (and every `n_batch` tokens after it): llama.cpp's KV of a token depends on the
        batch it was computed in, so equal cuts give bit-identical KV."""
        L = _lib()
        held = self._tokens[seq]
        if pos != len(held):
            raise ModelError(f"sequence {seq} holds {len(held)} tokens; cannot decode at position {pos}")
        if pos + len(tokens) > self.n_ctx:
            raise ModelError(f"sequence {seq} would hold {pos + len(tokens)} tokens, over n_ctx={self.n_ctx}")
        bounds = [b - pos for b in unit_bounds(pos, pos + len(tokens), cuts)]
        batch, owners = self._batch, self._owners(seq)
        starts = [(s, min(s + self.n_batch, b)) for a, b in zip(bounds, bounds[1:]) for s in range(a, b, self.n_batch)]
        for start, stop in starts:
            chunk = tokens[start:stop]
            batch.n_tokens = len(chunk)
            for i, token in enumerate(chunk):
                batch.token[i] = token
                batch.pos[i] = pos + start + i
                batch.n_seq_id[i] = len(owners)
                for j, owner in enumerate(owners):
                    batch.seq_id[i][j] = owner
                batch.logits[i] = False
            batch.logits[len(chunk) - 1] = stop == len(tokens)  # the vocabulary head only after the last token
            rc = L.llama_decode(self.ptr, batch)
            if rc != 0:
                self._logits_ready = False
                # a failed batch may have left part of itself in the KV: drop everything past the record
                for owner in owners:
                    L.llama_memory_seq_rm(self.memory, owner, len(held), -1)
                raise ModelError(f"llama_decode failed with code {rc} (KV cache full or invalid batch)")
            held.extend(chunk)
        self._logits_ready, self._logits_seq = bool(tokens), seq

    def logits(self) -> np.ndarray:
        """Logits after the last decoded token (a view valid until the next decode)."""
        if not self._logits_ready:
            raise ModelError("no logits: decode at least one token first")
        L = _lib()
        ptr = L.llama_get_logits_ith(self.ptr, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.model.n_vocab,))

    # -- KV sequence operations (the next stage injects compiled schema blocks with these) ---------
    def seq_rm(self, seq: int, p0: int = 0, p1: int = -1) -> None:
        """Remove positions [p0, p1) of `seq` (p1 = -1: to the end). Only suffixes keep the record exact."""
        held = self._tokens[seq]
        end = len(held) if p1 < 0 else min(p1, len(held))
        if end < len(held) and p0 > 0:
            raise ModelError("removing from the middle of a sequence needs seq_add to close the gap; trim a suffix")
        if not all([_lib().llama_memory_seq_rm(self.memory, owner, p0, p1) for owner in self._owners(seq)]):
            raise ModelError(f"llama.cpp refused to remove positions [{p0}, {p1}) of sequence {seq}")
        del held[p0:end]
        self._logits_ready = False

    def seq_cp(self, src: int, dst: int, n: int = -1) -> None:
        """Make `dst` share the first `n` positions of `src` (all when n = -1), replacing what dst held."""
        held = self._tokens[src]
        n = len(held) if n < 0 else min(n, len(held))
        self.seq_rm(dst)
        for owner in self._owners(dst):
            _lib().llama_memory_seq_cp(self.memory, src, owner, 0, n)
        self._tokens[dst] = list(held[:n])

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        """Shift positions [p0, p1) of `seq` by `delta` (RoPE is re-rotated by llama.cpp)."""
        for owner in self._owners(seq):
            _lib().llama_memory_seq_add(self.memory, owner, p0, p1, delta)
        self._logits_ready = False

    def seq_pos_max(self, seq: int) -> int:
        return int(_lib().llama_memory_seq_pos_max(self.memory, seq))

    def seq_state(self, seq: int) -> bytes:
        """Serialised KV (and bookkeeping) of one sequence, for saving a compiled block."""
        L = _lib()
        size = L.llama_state_seq_get_size(self.ptr, seq)
        buf = (ctypes.c_uint8 * size)()
        written = L.llama_state_seq_get_data(self.ptr, buf, size, seq)
        return bytes(buf[:written])

    def set_seq_state(self, seq: int, data: bytes, tokens: Sequence[int]) -> None:
        """Load a sequence saved by `seq_state`; `tokens` are the tokens it holds (positions 0..n-1)."""
        L = _lib()
        self.seq_rm(seq)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if L.llama_state_seq_set_data(self.ptr, buf, len(data), seq) == 0:
            raise ModelError(f"llama.cpp could not restore sequence {seq} (state from another model or context?)")
        for partner in self._owners(seq)[1:]:
            L.llama_memory_seq_cp(self.memory, seq, partner, 0, -1)
        self._tokens[seq] = list(tokens)

    # -- spans: compiled blocks that sit at positions p0.. of a sequence, not from 0 ------------------
    def can_shift(self) -> bool:
        """Whether positions can be shifted (`seq_add`): false for memory that cannot re-rotate its keys."""
        return bool(_lib().llama_memory_can_shift(self.memory))

    def span_state(self, seq: int, p0: int) -> bytes:
        """The state of positions p0.. of `seq` alone (a compiled block without the prefix it was computed
        behind); empties the sequence."""
        L = _lib()
        if p0 > 0 and not L.llama_memory_seq_rm(self.memory, seq, 0, p0):
            raise ModelError(f"llama.cpp refused to remove positions [0, {p0}) of sequence {seq}")
        data = self.seq_state(seq)
        L.llama_memory_seq_rm(self.memory, seq, -1, -1)
        self._tokens[seq] = []
        self._logits_ready = False
        return data

    def load_span(self, seq: int, data: bytes, delta: int = 0) -> None:
        """Restore a `span_state` into `seq` (emptied first) at the positions it was saved from plus `delta`. The
        record of `seq` stays empty: a span is only appended to another sequence (`append_span`).

        A nonzero `delta` is applied to the state itself (`nexus.llm.rope.shift_state`: positions moved, keys
        re-rotated), because llama.cpp's shift (`seq_add`) makes the next decode rotate the keys of every cell of
        the cache (314 vs 75 ms for a 26-token decode at 16,384 cells, docs/history.md); a state that cannot be parsed is
        shifted by llama.cpp instead, with the reason logged once. `shifts` counts both ways."""
        L = _lib()
        how = None
        if delta:
            try:
                data, how = shift_state(data, delta, self._rope_params()), "state"
            except StateFormatError as exc:
                how = "seq_add"
                if not self._shift_warned:
                    self._shift_warned = True
                    log.warning("KV spans are shifted by llama.cpp (a whole-cache K-shift at the next decode): %s", exc)
        self.seq_rm(seq)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if L.llama_state_seq_set_data(self.ptr, buf, len(data), seq) == 0:
            raise ModelError(f"llama.cpp could not restore a span into sequence {seq} (state from another model or context?)")
        if how == "seq_add":
            self.seq_add(seq, 0, -1, delta)
        if how:
            self.shifts[how] += 1
        self._logits_ready = False

    def _rope_params(self) -> RopeParams:
        if self._rope is None:
            try:
                self._rope = self.model.rope_params()
            except StateFormatError as exc:
                self._rope = exc
        if isinstance(self._rope, StateFormatError):
            raise self._rope
        return self._rope

    def append_span(self, src: int, dst: int, p0: int, p1: int, tokens: Sequence[int]) -> None:
        """Let `dst` share positions [p0, p1) of `src`, which hold `tokens`; `dst` must hold exactly p0 tokens."""
        held = self._tokens[dst]
        if p0 != len(held) or p1 - p0 != len(tokens):
            raise ModelError(f"sequence {dst} holds {len(held)} tokens; cannot append {len(tokens)} at [{p0}, {p1})")
        for owner in self._owners(dst):
            _lib().llama_memory_seq_cp(self.memory, src, owner, p0, p1)
        held.extend(tokens)
        self._logits_ready = False

    def drop(self, seq: int) -> None:
        """Empty `seq`, whatever it holds (also a span); logits of another sequence's last decode stay valid."""
        for owner in self._owners(seq):
            _lib().llama_memory_seq_rm(self.memory, owner, -1, -1)
        self._tokens[seq] = []
        if seq == self._logits_seq:
            self._logits_ready = False

    def clear(self) -> None:
        _lib().llama_memory_clear(self.memory, True)
        for seq in self._tokens:
            self._tokens[seq] = []
        self._logits_ready = False

    # -- lifetime ----------------------------------------------------------------------------------
    def close(self) -> None:
        L = _lib()
        if getattr(self, "_batch", None) is not None:
            L.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "ptr", None):
            L.llama_free(self.ptr)
            self.ptr = None

    def __enter__(self) -> "KVContext":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class GrammarConstraint:
    """A GBNF grammar as a llama.cpp sampler, used as a filter: which candidate tokens may come next.

    Greedy decoding asks first whether the model's favourite token is allowed (one check), then the top
    few hundred, and only then the whole vocabulary — the grammar is costly to apply to 262k tokens.
    """

    def __init__(self, model: GGUFModel, gbnf: str, root: str = "root"):
        L = _lib()
        self.model = model
        self.ptr = L.llama_sampler_init_grammar(model.vocab, gbnf.encode("utf-8"), root.encode("utf-8"))
        if not self.ptr:
            raise GrammarError("llama.cpp rejected the grammar (see the GBNF parse error above)")
        self._arrays: dict[int, tuple[Any, np.ndarray]] = {}

    def _array(self, n: int) -> tuple[Any, np.ndarray]:
        """A `llama_token_data_array` of `n` entries and a numpy view of its entries (fields id, logit, p)."""
        L = _lib()
        if n not in self._arrays:
            data = (L.llama_token_data * n)()
            arr = L.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
            self._arrays[n] = (arr, np.ctypeslib.as_array(data))  # the view keeps `data` alive
        return self._arrays[n]

    def allowed(self, candidates: np.ndarray) -> np.ndarray:
        """The subset of `candidates` (token ids) the grammar accepts next, in the same order. The entries are
        filled and read through a numpy view, not one ctypes call per entry: the whole vocabulary (262k tokens)
        took 38 ms instead of 133 ms, most of it llama.cpp's own grammar check."""
        L = _lib()
        n = len(candidates)
        arr, view = self._array(n)
        view["id"] = candidates
        view["logit"] = 0.0
        view["p"] = 0.0
        arr.size, arr.selected, arr.sorted = n, -1, False
        L.llama_sampler_apply(self.ptr, ctypes.byref(arr))
        kept = view[: arr.size]
        return kept["id"][kept["logit"] != -np.inf].astype(np.int64)

    def best(self, logits: np.ndarray, tops: Sequence[int] = (256, 8192)) -> int | None:
        """The highest-scoring token the grammar allows, or None if it allows none (it is complete). Each wider
        set is tried only when the narrower one holds no allowed token; the first that does holds the answer
        (it contains every token scoring above the ones left out)."""
        first = int(np.argmax(logits))
        if self.allowed(np.asarray([first])).size:
            return first
        for top in tops:
            if top >= len(logits):
                break
            head = np.argpartition(logits, -top)[-top:]
            ok = self.allowed(head)
            if ok.size:
                return int(ok[np.argmax(logits[ok])])
        ok = self.allowed(np.arange(len(logits)))
        return int(ok[np.argmax(logits[ok])]) if ok.size else None

    def accept(self, token: int) -> None:
        _lib().llama_sampler_accept(self.ptr, token)

    def reset(self) -> None:
        _lib().llama_sampler_reset(self.ptr)

    def close(self) -> None:
        if getattr(self, "ptr", None):
            _lib().llama_sampler_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
