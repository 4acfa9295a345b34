"""Nexus: retrieval-based tool routing for agentic LLMs with large MCP tool registries.

Pipeline: registry -> signatures -> semantic lookaside buffer (SLB) -> gate -> LLM path; `nexus.Nexus` is the
facade every server, benchmark and command goes through (imported on first use: `import nexus` stays light).
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["Nexus", "Overrides", "Routing"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from nexus import nexus as facade

        return getattr(facade, name)
    raise AttributeError(f"module 'nexus' has no attribute {name!r}")
