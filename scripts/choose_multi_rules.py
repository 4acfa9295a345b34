"""Choose the several-request rule (`NEXUS_GATE_PER_REQUEST`: SLB tools each request of a turn adds to a SHORTLIST)
on the dev half of BFCL parallel_multiple, tool-disjoint from the gate's training data; the README reports the
test half (`nexus gate eval --multi ... --multi-split test`).

    PYTHONPATH=src .venv/bin/python scripts/choose_multi_rules.py ../shared/data/bfcl [gate folder]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nexus.config import Settings
from nexus.gate import BoundaryGate
from nexus.datasets.bfcl import bfcl_multi_call
from nexus.gate.bench import disjoint_multi_call, load_gate, multi_call_metrics, split_half
from nexus.registry import Registry
from nexus.slb import HybridWeights, SemanticLookasideBuffer, SentenceTransformerEmbedder


def main(src: str, model: str | None = None) -> None:
    import torch

    torch.set_num_threads(1)
    settings = Settings()
    gate_model = load_gate(model)
    tools, turns = bfcl_multi_call(Path(src))
    tools, turns, dropped = disjoint_multi_call(tools, turns, gate_model.header.training.get("tools_fingerprint"))
    dev = split_half(turns, "dev")
    registry = Registry()
    registry.set_source("parallel_multiple", tools)
    slb = SemanticLookasideBuffer(SentenceTransformerEmbedder(settings.embedder), HybridWeights(settings.lexical_weight, settings.name_bonus))
    slb.sync(registry)
    for per_request in (0, 1, 2, 3, 5):
        gate = BoundaryGate(slb, registry, gate_model, per_request=per_request)
        print(json.dumps({"per_request": per_request, "n_tools": len(registry), **dropped, **multi_call_metrics(gate, dev)}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
