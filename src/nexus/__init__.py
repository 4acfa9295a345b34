"""Nexus: retrieval-based tool routing for agentic LLMs with large MCP tool registries.

Pipeline: registry -> signatures -> semantic lookaside buffer (SLB) -> gate -> LLM path.
"""

__version__ = "0.1.0"
