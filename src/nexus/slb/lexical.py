"""The lexical channel: BM25 (bm25s) over tool text, plus exact tool-name matches in the query."""

from __future__ import annotations

import functools
import re
from typing import Sequence

import numpy as np

from nexus.signatures.compiler import split_identifier

STOPWORDS = frozenset(
    "a an and are as at be by can could do does for from get give has have how i in is it its me my of on "
    "or please set show tell that the this to use using want was what when where which will with would you your".split()
)


def is_identifier_like(name: str) -> bool:
    """A name worth an exact-match bonus: `git_status`, `getUser`, `math.factorial` — not a plain word like `search`."""
    return len(name) >= 4 and bool(re.search(r"[_.\-/0-9]|[a-z][A-Z]", name))


@functools.lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer: Snowball stemmers in C

    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Lower-cased, identifier-split, stop-word-free, Snowball-stemmed terms (`Trains` == `train`)."""
    words = split_identifier(re.sub(r"[^\w.\-/ ]+", " ", text)).split()
    return _stemmer().stemWords([w for w in words if w not in STOPWORDS and len(w) > 1])


class LexicalIndex:
    """BM25 scores for every document plus a name-match indicator."""

    def __init__(self, names: Sequence[Sequence[str]], texts: Sequence[str]):
        """`names[i]` lists what tool i answers to (its registry key and the name its server uses)."""
        import bm25s

        self._n = len(texts)
        self._by_name: dict[str, set[int]] = {}
        for i, aliases in enumerate(names):
            for alias in aliases:
                if is_identifier_like(alias):
                    self._by_name.setdefault(alias.lower(), set()).add(i)
        corpus = [tokenize(t) or ["_empty_"] for t in texts]
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)
        self._vocab = set(w for doc in corpus for w in doc)

    def bm25(self, query: str) -> np.ndarray:
        terms = [t for t in tokenize(query) if t in self._vocab]
        if not terms:
            return np.zeros(self._n, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)

    def name_matches(self, query: str) -> np.ndarray:
        """1.0 where the query contains the tool's name as a whole word (e.g. `git_status`)."""
        hits = np.zeros(self._n, dtype=np.float32)
        for word in re.findall(r"[\w][\w.\-/]*", query.lower()):
            for candidate in (word, word.rstrip(".-/")):
                for i in self._by_name.get(candidate, ()):
                    hits[i] = 1.0
        return hits
