"""The lexical channel: BM25 (bm25s) over tool text, plus exact tool-name matches in the query."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from nexus.signatures.compiler import split_identifier

STOPWORDS = frozenset(
    "a an and are as at be by can could do does for from get give has have how i in is it its me my of on "
    "or please set show tell that the this to use using want was what when where which will with would you your".split()
)


def tokenize(text: str) -> list[str]:
    words = split_identifier(re.sub(r"[^\w.\-/ ]+", " ", text)).split()
    return [w for w in words if w not in STOPWORDS and len(w) > 1]


class LexicalIndex:
    """BM25 scores for every document plus a name-match indicator."""

    def __init__(self, names: Sequence[str], texts: Sequence[str]):
        import bm25s

        self._names = [n.lower() for n in names]
        self._by_name: dict[str, list[int]] = {}
        for i, name in enumerate(self._names):
            self._by_name.setdefault(name, []).append(i)
            if "." in name:  # a namespaced key `server.tool` also answers to its bare name
                self._by_name.setdefault(name.rsplit(".", 1)[1], []).append(i)
        corpus = [tokenize(t) or ["_empty_"] for t in texts]
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)
        self._vocab = set(w for doc in corpus for w in doc)

    def bm25(self, query: str) -> np.ndarray:
        terms = [t for t in tokenize(query) if t in self._vocab]
        if not terms:
            return np.zeros(len(self._names), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)

    def name_matches(self, query: str) -> np.ndarray:
        """1.0 where the query contains the tool's name as a whole word (e.g. `git_status`)."""
        hits = np.zeros(len(self._names), dtype=np.float32)
        for word in re.findall(r"[\w][\w.\-/]*", query.lower()):
            for candidate in (word, word.rstrip(".-/")):
                for i in self._by_name.get(candidate, ()):
                    hits[i] = 1.0
        return hits
