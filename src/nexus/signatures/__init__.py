"""Stage 2: compact signatures for the LLM and retrieval text for the SLB."""

from nexus.signatures.compiler import compile_signature, retrieval_text
from nexus.signatures.tokens import GGUFTokenCounter, TokenCounter

__all__ = ["GGUFTokenCounter", "TokenCounter", "compile_signature", "retrieval_text"]
