"""Stage 5: the LLM path — backends, prompts, grammars, and the validated tool call.

Backends are chosen from an explicit table by `Settings.llm_backend`; llama_cpp is imported only when a
model is loaded.

>>> sorted(BACKENDS)
['llama-cpp', 'openai']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from nexus.errors import ConfigError
from nexus.llm.base import ContextOverflow, Generation, LLMBackend, LLMError, Prompt, Selection
from nexus.llm.calls import ToolCall, ToolCaller
from nexus.llm.prompts import Exchange, PromptBuilder

if TYPE_CHECKING:
    from nexus.config import Settings


def _llama_cpp(settings: "Settings") -> LLMBackend:
    from nexus.llm.llamacpp import LlamaCppBackend

    return LlamaCppBackend(settings.llm_model, n_ctx=settings.n_ctx, n_threads=settings.n_threads)


def _openai(settings: "Settings") -> LLMBackend:
    from nexus.llm.http import OpenAIHttpBackend

    if settings.n_ctx <= 0:
        raise ConfigError("NEXUS_N_CTX must be the server's context size (> 0) for llm_backend=openai")
    return OpenAIHttpBackend(settings.openai_base_url, model=settings.openai_model, n_ctx=settings.n_ctx)


BACKENDS: dict[str, Callable[["Settings"], LLMBackend]] = {"llama-cpp": _llama_cpp, "openai": _openai}


def make_backend(settings: "Settings") -> LLMBackend:
    """The backend `settings.llm_backend` names; an unknown name is an error, never a silent default."""
    try:
        factory = BACKENDS[settings.llm_backend]
    except KeyError:
        raise ConfigError(f"unknown NEXUS_LLM_BACKEND {settings.llm_backend!r}; choose one of {', '.join(BACKENDS)}") from None
    return factory(settings)


__all__ = ["BACKENDS", "ContextOverflow", "Exchange", "Generation", "LLMBackend", "LLMError", "Prompt", "PromptBuilder",
           "Selection", "ToolCall", "ToolCaller", "make_backend"]
