"""Stage 1: the tool registry and its loaders (files and live MCP servers)."""

from nexus.registry.files import load_registry, load_tools_file
from nexus.registry.registry import Registry, RegistryDiff
from nexus.registry.tool import Tool, check_tool

__all__ = ["Registry", "RegistryDiff", "Tool", "check_tool", "load_registry", "load_tools_file"]
