"""Token accounting with the LLM's own tokenizer (the GGUF's vocabulary, loaded without weights)."""

from __future__ import annotations

from typing import Protocol


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class GGUFTokenCounter:
    """Counts tokens with a GGUF model's tokenizer; loads only the vocabulary (fast, little memory)."""

    def __init__(self, model_path: str):
        from llama_cpp import Llama

        self._llm = Llama(model_path=model_path, vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))


class WhitespaceTokenCounter:
    """Rough stand-in for tests: one token per whitespace-separated word."""

    def count(self, text: str) -> int:
        return len(text.split())
