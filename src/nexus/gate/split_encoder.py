"""A segment-cosine cross-encoder whose lower layers read each segment alone, so a tool's share of the work is
done once per tool, not once per turn (PreTTR: MacAvaney et al., SIGIR 2020, "Efficient document re-ranking for
transformers by precomputing term representations").

The joint `SegmentCosineScorer` runs all six MiniLM layers over every (turn, tool) pair: at k=10 that is ten
~96-token sequences per turn. Here layers `[0, joint_from)` run on the turn and on each tool text separately (the
tool segment keeps token type 1 and sits at a fixed position offset, so its states do not depend on the turn),
the tool's states are cached by tool text, and only layers `[joint_from, 6)` run jointly over the ten pairs: with
`joint_from` 4, a third of the joint encoder's per-pair work is left per turn.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nexus.gate.cross_encoder import DEFAULT_MAX_LENGTH, SegmentCosineScorer

JOINT_FROM = 4       # layers below run per segment; chosen on dev registries D3 and DB (docs/history.md, gate speed)
TURN_TOKENS = 32     # the turn's budget, [CLS] and [SEP] included (a BFCL request is ~20 tokens)
TOOL_OFFSET = 24     # position of a tool's first token (where it sits behind a typical turn in the joint model)
CACHE_TOOLS = 4096   # tool texts whose lower-layer states are kept (LRU): ~100 kB each in fp32, ~400 MB at most


def _drop_tool_states(network: Any, incompatible_keys: Any) -> None:
    """A `load_state_dict` post-hook: weights loaded (or rounded) in place make every cached tool state stale."""
    network.tool_states.clear()


class SplitCosineScorer(SegmentCosineScorer):
    """`SegmentCosineScorer` with per-segment lower layers; loads the same weights (a joint gate or the tuned
    embedder) and adds `joint_from`, `turn_tokens` and `tool_offset` to its head file."""

    def __init__(self, path: str | Path | None = None, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 32,
                 seed: int = 0, quantize: bool = False, scale: float = 20.0, joint_from: int | None = None,
                 turn_tokens: int | None = None, tool_offset: int | None = None):
        super().__init__(path, max_length=max_length, batch_size=batch_size, seed=seed, quantize=False, scale=scale)
        # the cache lives on the network, so a deep copy carries its own and the hook clears the copy's
        self.network.tool_states = OrderedDict()
        self.network.register_load_state_dict_post_hook(_drop_tool_states)
        saved = Path(path) / self.HEAD_FILE if path else None
        params = json.loads(saved.read_text()) if saved is not None and saved.is_file() else {}
        layers = len(self.network["encoder"].encoder.layer)
        self.joint_from = int(joint_from if joint_from is not None else params.get("joint_from", JOINT_FROM))
        if not 0 <= self.joint_from <= layers:
            raise ValueError(f"joint_from must be within 0..{layers}, not {self.joint_from}")
        self.turn_tokens = int(turn_tokens if turn_tokens is not None else params.get("turn_tokens", TURN_TOKENS))
        self.tool_offset = int(tool_offset if tool_offset is not None else params.get("tool_offset", TOOL_OFFSET))
        self.tool_tokens = max(max_length - self.turn_tokens, 8)
        self.id = f"split{self.joint_from}:{self.path.name}:{max_length}"
        if quantize:
            self.quantize()

    @property
    def _cache(self) -> OrderedDict[str, Any]:
        """Lower-layer states by tool text (LRU)."""
        return self.network.tool_states

    # tokenisation: the turn as "[CLS] turn [SEP]" (type 0), the tool as "tool [SEP]" (type 1) at a fixed offset
    def encode(self, turns: Sequence[str], docs: Sequence[str]) -> dict:
        return {"turns": self._encode_turns(turns), "docs": self._encode_docs(docs)}

    def _encode_turns(self, turns: Sequence[str]) -> dict:
        batch = self.tokenizer(list(turns), truncation=True, max_length=self.turn_tokens, padding=True, return_tensors="pt")
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"],
                "token_type_ids": batch["input_ids"] * 0, "position_ids": _positions(batch["input_ids"], 0)}

    def _encode_docs(self, docs: Sequence[str]) -> dict:
        import torch

        tok = self.tokenizer
        ids = [x[: self.tool_tokens - 1] + [tok.sep_token_id]
               for x in tok(list(docs), add_special_tokens=False, truncation=False)["input_ids"]]
        width = max(len(x) for x in ids)
        input_ids = torch.tensor([x + [tok.pad_token_id] * (width - len(x)) for x in ids])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
        return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": mask.clone(),
                "position_ids": _positions(input_ids, self.tool_offset)}

    def _lower(self, seg: dict) -> Any:
        """States after layer `joint_from` of one segment read alone."""
        enc = self.network["encoder"]
        h = enc.embeddings(input_ids=seg["input_ids"], token_type_ids=seg["token_type_ids"], position_ids=seg["position_ids"])
        return self._layers(h, seg["attention_mask"], enc.encoder.layer[: self.joint_from])

    def _layers(self, h: Any, mask: Any, layers: Sequence[Any]) -> Any:
        from transformers.masking_utils import create_bidirectional_mask

        if not len(layers):
            return h
        attn = create_bidirectional_mask(config=self.network["encoder"].config, inputs_embeds=h, attention_mask=mask)
        for layer in layers:
            out = layer(h, attn)
            h = out[0] if isinstance(out, tuple) else out
        return h

    def _upper(self, turn_h: Any, turn_mask: Any, doc_h: Any, doc_mask: Any) -> Any:
        """Join the segments, run the upper layers, pool each segment and score its cosine."""
        import torch

        enc = self.network["encoder"]
        h = self._layers(torch.cat([turn_h, doc_h], 1), torch.cat([turn_mask, doc_mask], 1),
                         enc.encoder.layer[self.joint_from:])
        n = turn_h.shape[1]
        first, second = turn_mask.to(h.dtype), doc_mask.to(h.dtype)
        u = (h[:, :n] * first[..., None]).sum(1) / first.sum(1, keepdim=True).clamp(min=1.0)
        v = (h[:, n:] * second[..., None]).sum(1) / second.sum(1, keepdim=True).clamp(min=1.0)
        head = self.network["head"]
        return head.scale * torch.nn.functional.cosine_similarity(u, v, dim=-1) + head.bias

    def logits(self, batch: dict) -> Any:
        """Training and uncached scoring: both segments' lower layers computed here."""
        turns, docs = batch["turns"], batch["docs"]
        if self.network.training:
            self._cache.clear()  # the weights are moving: cached states are stale
        return self._upper(self._lower(turns), turns["attention_mask"], self._lower(docs), docs["attention_mask"])

    def _scored(self, turns: Sequence[str], docs: Sequence[str], keep: bool = True) -> list[np.ndarray]:
        """Each distinct turn read once, each tool's lower states from the cache, then the upper layers. `keep`
        False: tools not cached are read for this call only and the cache is left as it was."""
        turn_h, turn_mask, row = self._read_turns(turns)
        states = self._doc_states(docs, keep)
        out = []
        for start in range(0, len(turns), self.batch_size):
            idx = [row[t] for t in turns[start:start + self.batch_size]]
            doc_h, doc_mask = _pad(states[start:start + self.batch_size])
            out.append(self._upper(turn_h[idx], turn_mask[idx], doc_h, doc_mask).float().numpy())
        return out

    def _read_turns(self, turns: Sequence[str]) -> tuple[Any, Any, dict[str, int]]:
        """Each distinct turn's states after the lower layers, its mask, and its row by text."""
        distinct = list(dict.fromkeys(turns))
        seg = self._encode_turns(distinct)
        return self._lower(seg), seg["attention_mask"], {t: i for i, t in enumerate(distinct)}

    def _doc_states(self, docs: Sequence[str], keep: bool = True) -> list[Any]:
        return self._cached(self._cache, docs, keep, self._read_states)

    def _read_states(self, chunk: Sequence[str]) -> dict[str, Any]:
        seg = self._encode_docs(chunk)
        h = self._lower(seg)
        return {doc: h[i, : int(seg["attention_mask"][i].sum())].clone() for i, doc in enumerate(chunk)}

    def _cached(self, cache: OrderedDict, docs: Sequence[str], keep: bool, read: Callable[[Sequence[str]], dict]) -> list[Any]:
        """Each doc's entry from the LRU `cache`, the missing ones read by `read` one doc at a time: INT8's activation
        scale is the batch's, so a tool read beside others got states that depended on which tools came with it, and a
        turn's decision on what the cache had read before it ("How are you doing today?" was NO_TOOL on its own and a
        SHORTLIST after twenty demo turns). `keep` False: what was read is used for this call only and the cache is left
        as it was."""
        fresh: dict[str, Any] = {}
        for doc in dict.fromkeys(docs):
            if doc not in cache:
                fresh.update(read([doc]))
        if not keep:
            return [fresh[d] if d in fresh else cache[d] for d in docs]
        cache.update(fresh)
        for doc in docs:
            cache.move_to_end(doc)
        while len(cache) > CACHE_TOOLS:
            cache.popitem(last=False)
        return [cache[d] for d in docs]

    def quantize(self) -> None:
        self._cache.clear()
        super().quantize()

    def save(self, folder: Path, compact: bool = False) -> None:
        super().save(folder, compact=compact)
        head_file = Path(folder) / self.HEAD_FILE
        params = json.loads(head_file.read_text())
        params.update(joint_from=self.joint_from, turn_tokens=self.turn_tokens, tool_offset=self.tool_offset)
        head_file.write_text(json.dumps(params))


def _positions(input_ids: Any, offset: int) -> Any:
    import torch

    return (torch.arange(input_ids.shape[1]) + offset).expand_as(input_ids)


def _pad(states: Sequence[Any]) -> tuple[Any, Any]:
    """Stack variable-length (L, H) states into (B, max L, H) with a 0/1 mask."""
    import torch

    width = max(s.shape[0] for s in states)
    h = torch.zeros(len(states), width, states[0].shape[1], dtype=states[0].dtype)
    mask = torch.zeros(len(states), width, dtype=torch.long)
    for i, s in enumerate(states):
        h[i, : s.shape[0]] = s
        mask[i, : s.shape[0]] = 1
    return h, mask
