"""A split scorer whose upper layers compute only the turn's tokens: the tool is read alone in every layer, so its
keys, values and pooled vector are cached once per tool, and a turn's work is its own ~20 tokens per pair instead
of ~90 (a query-side-only interaction, as in PreTTR's precomputed document terms carried to the top layers).

In the upper layers `[joint_from, 6)` each turn token attends to the turn and to the tool's tokens (whose keys and
values come from the tool read alone); the tool tokens never attend to the turn. The score is still
`scale * cos(turn pooled, tool pooled) + bias`. Training and scoring run the same code, so what is trained is
what is served.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from nexus.gate.split_encoder import SplitCosineScorer


class SplitTurnScorer(SplitCosineScorer):
    """`SplitCosineScorer` whose tool side is read alone through every layer (cached per tool text)."""

    def __init__(self, *args: Any, quantize: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.network.tool_sides = OrderedDict()  # tool text -> (per upper layer (keys, values), pooled vector)
        self.network.stacked = {}   # the last batch of tools stacked (a registry within k scores the same batch each turn)
        self.network.register_load_state_dict_post_hook(_drop_tool_sides)
        self.id = self.id.replace("split", "splitturn", 1)
        if quantize:
            self.quantize()

    def _clear(self) -> None:
        _drop_tool_sides(self.network, None)

    def quantize(self) -> None:
        self._clear()
        super().quantize()

    def _tool_sides(self, docs: dict) -> tuple[list[list[tuple[Any, Any]]], Any]:
        """The tools read alone through the upper layers: per layer (keys, values) of shape (B, heads, L, d) and
        the masked mean of the last layer's states (B, H)."""
        h = self._lower(docs)
        mask = docs["attention_mask"]
        layers = self.network["encoder"].encoder.layer[self.joint_from:]
        kv = []
        for layer in layers:
            kv.append(_keys_values(layer, h))
            h = _layer(layer, h, mask)
        m = mask.to(h.dtype)
        return kv, (h * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1.0)

    def _turn_upper(self, turn_h: Any, turn_mask: Any, kv: Sequence[tuple[Any, Any]], doc_mask: Any,
                    pooled: Any) -> Any:
        import torch

        layers = self.network["encoder"].encoder.layer[self.joint_from:]
        h = turn_h
        for layer, (k, v) in zip(layers, kv):
            h = _layer(layer, h, turn_mask, k, v, doc_mask)
        m = turn_mask.to(h.dtype)
        u = (h * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1.0)
        head = self.network["head"]
        return head.scale * torch.nn.functional.cosine_similarity(u, pooled, dim=-1) + head.bias

    def logits(self, batch: dict) -> Any:
        """Training and uncached scoring: both sides computed here."""
        turns, docs = batch["turns"], batch["docs"]
        if self.network.training:
            self._cache.clear()
            self._clear()
        kv, pooled = self._tool_sides(docs)
        return self._turn_upper(self._lower(turns), turns["attention_mask"], kv, docs["attention_mask"], pooled)

    def _scored(self, turns: Sequence[str], docs: Sequence[str], keep: bool = True) -> list[np.ndarray]:
        """Each distinct turn's lower layers once, each tool's side from the cache, then the turn's upper layers."""
        turn_h, turn_mask, row = self._read_turns(turns)
        sides = self._cached(self.network.tool_sides, docs, keep, self._read_sides)
        out = []
        for start in range(0, len(turns), self.batch_size):
            idx = [row[t] for t in turns[start:start + self.batch_size]]
            batch = tuple(docs[start:start + self.batch_size])
            stacked = self.network.stacked.get(batch)
            if stacked is None:
                stacked = _stack(sides[start:start + self.batch_size])
                if keep:
                    self.network.stacked = {batch: stacked}
            kv, doc_mask, pooled = stacked
            out.append(self._turn_upper(turn_h[idx], turn_mask[idx], kv, doc_mask, pooled).float().numpy())
        return out

    def _read_sides(self, chunk: Sequence[str]) -> dict[str, Any]:
        seg = self._encode_docs(chunk)
        kv, pooled = self._tool_sides(seg)
        out = {}
        for i, doc in enumerate(chunk):
            n = int(seg["attention_mask"][i].sum())
            out[doc] = ([(k[i, :, :n].clone(), v[i, :, :n].clone()) for k, v in kv], pooled[i].clone())
        return out


def _drop_tool_sides(network: Any, incompatible_keys: Any) -> None:
    """Weights loaded in place make every cached tool side stale."""
    network.tool_sides.clear()
    network.stacked = {}


def _keys_values(layer: Any, h: Any) -> tuple[Any, Any]:
    att = layer.attention.self
    shape = (h.shape[0], h.shape[1], -1, att.attention_head_size)
    return att.key(h).view(shape).transpose(1, 2), att.value(h).view(shape).transpose(1, 2)


def _layer(layer: Any, h: Any, mask: Any, keys: Any = None, values: Any = None, other_mask: Any = None) -> Any:
    """One BERT layer over `h` whose tokens also attend to another segment's `keys` / `values` (when given)."""
    import torch

    att = layer.attention.self
    shape = (h.shape[0], h.shape[1], -1, att.attention_head_size)
    q = att.query(h).view(shape).transpose(1, 2)
    k, v = _keys_values(layer, h)
    allowed = mask
    if keys is not None:
        k, v, allowed = torch.cat([k, keys], 2), torch.cat([v, values], 2), torch.cat([mask, other_mask], 1)
    o = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed.bool()[:, None, None, :], dropout_p=att.dropout.p if att.training else 0.0)
    a = layer.attention.output(o.transpose(1, 2).reshape(h.shape), h)
    return layer.output(layer.intermediate(a), a)


def _stack(sides: Sequence[tuple[list[tuple[Any, Any]], Any]]) -> tuple[list[tuple[Any, Any]], Any, Any]:
    """Cached tool sides of different lengths padded into one batch: per layer (keys, values), mask, pooled."""
    import torch

    width = max(s[0][0][0].shape[1] for s in sides)
    mask = torch.zeros(len(sides), width, dtype=torch.long)
    kv = []
    for j in range(len(sides[0][0])):
        k0 = sides[0][0][j][0]
        keys = torch.zeros(len(sides), k0.shape[0], width, k0.shape[2], dtype=k0.dtype)
        values = torch.zeros_like(keys)
        for i, (layers, _) in enumerate(sides):
            k, v = layers[j]
            keys[i, :, :k.shape[1]], values[i, :, :k.shape[1]] = k, v
            mask[i, :k.shape[1]] = 1
        kv.append((keys, values))
    return kv, mask, torch.stack([s[1] for s in sides])
