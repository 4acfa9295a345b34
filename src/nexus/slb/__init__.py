"""Stage 3: the semantic lookaside buffer (INT8 embedding table + lexical channel)."""

from nexus.slb.embedders import Embedder, HashEmbedder, SentenceTransformerEmbedder
from nexus.slb.index import Hit, HybridWeights, SemanticLookasideBuffer, SyncStats

__all__ = ["Embedder", "HashEmbedder", "Hit", "HybridWeights", "SemanticLookasideBuffer", "SentenceTransformerEmbedder", "SyncStats"]
