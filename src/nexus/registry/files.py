"""Tool files: MCP tools/list, OpenAI `tools`, BFCL function docs, MCP server catalogues.

The shape is detected from the content; a file loads completely or not at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from nexus.errors import ToolLoadError
from nexus.registry.bfcl_types import to_json_schema
from nexus.registry.registry import Registry
from nexus.registry.tool import Tool, check_tool

MAX_FILE_BYTES = 64 * 1024 * 1024


def read_json(path: Path) -> Any:
    """Read a JSON (or JSON Lines) file with errors that name the file and the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ToolLoadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ToolLoadError(f"{path}: {len(data):,} bytes is over the {MAX_FILE_BYTES:,}-byte limit")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ToolLoadError(f"{path}: not UTF-8 (bad byte at offset {exc.start}); re-save it as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:
            try:
                return [json.loads(line) for line in lines]
            except json.JSONDecodeError:
                pass
        raise ToolLoadError(f"{path}: invalid JSON at line {first.lineno} column {first.colno}: {first.msg}") from None


def detect_format(data: Any) -> str:
    """Name the shape of a parsed tools file: mcp, openai, bfcl, bfcl-questions or catalogue."""
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        return "mcp"
    items = data if isinstance(data, list) else [data]
    first = items[0] if items else {}
    if not isinstance(first, dict):
        return "unknown"
    if first.get("type") == "function" and isinstance(first.get("function"), dict):
        return "openai"
    if "inputSchema" in first or "input_schema" in first:
        return "mcp"
    if "parameters" in first and "name" in first:
        return "bfcl"
    if "function" in first and "question" in first:
        return "bfcl-questions"
    if isinstance(first.get("tools"), dict):
        return "catalogue"
    if not items:
        return "mcp"
    return "unknown"


def _mcp_items(data: Any) -> list[Any]:
    if isinstance(data, dict):
        return data["tools"] if isinstance(data.get("tools"), list) else [data]
    return data if isinstance(data, list) else [data]


def _from_function(fn: Any) -> Any:
    if not isinstance(fn, dict):
        return fn
    schema = to_json_schema(fn.get("parameters") or {"type": "object", "properties": {}})
    return {"name": fn.get("name"), "description": fn.get("description", ""), "inputSchema": schema}


def _raw_tools(data: Any, fmt: str) -> Iterable[tuple[str | None, Any]]:
    """Yield (sub-origin, raw MCP-shaped tool) pairs."""
    if fmt == "mcp":
        for item in _mcp_items(data):
            yield None, item
    elif fmt == "openai":
        for item in data if isinstance(data, list) else [data]:
            yield None, _from_function(item.get("function") if isinstance(item, dict) else item)
    elif fmt == "bfcl":
        for item in data if isinstance(data, list) else [data]:
            yield None, _from_function(item)
    elif fmt == "bfcl-questions":
        seen: set[str] = set()
        for record in data:
            for fn in record.get("function", []):
                if isinstance(fn, dict) and fn.get("name") not in seen:
                    seen.add(fn.get("name"))
                    yield None, _from_function(fn)
    elif fmt == "catalogue":
        for server in data:
            for server_name, block in (server.get("tools") or {}).items():
                for item in (block or {}).get("tools", []):
                    yield str(server_name), item


def tools_from_data(data: Any, origin: str, where: str) -> list[Tool]:
    """Validate every tool of one parsed source; raise on the first problem, return nothing half-way."""
    fmt = detect_format(data)
    if fmt == "unknown":
        raise ToolLoadError(
            f"{where}: unrecognised tools file; expected an MCP tools/list, OpenAI tools or BFCL function list"
        )
    tools: list[Tool] = []
    seen: dict[tuple[str, str], int] = {}
    for position, (sub_origin, raw) in enumerate(_raw_tools(data, fmt)):
        tool = check_tool(raw, sub_origin or origin, f"{where}[{position}]")
        key = (tool.origin, tool.name)
        if key in seen:
            raise ToolLoadError(
                f"{where}: duplicate tool name {tool.name!r} at positions {seen[key]} and {position}; names must be unique per source"
            )
        seen[key] = position
        tools.append(tool)
    return tools


def load_tools_file(path: str | Path, origin: str | None = None) -> list[Tool]:
    """Load every tool of a file, or every `*.json` of a folder (one tool or list per file).

    >>> load_tools_file("missing.json")
    Traceback (most recent call last):
    ...
    nexus.errors.ToolLoadError: missing.json: cannot read: No such file or directory
    """
    path = Path(path)
    origin = origin or path.stem
    if path.is_dir():
        tools: list[Tool] = []
        for child in sorted(path.glob("*.json")):
            tools.extend(tools_from_data(read_json(child), origin, str(child)))
        names = [t.name for t in tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ToolLoadError(f"{path}: duplicate tool names across files: {', '.join(dupes[:5])}")
        return tools
    return tools_from_data(read_json(path), origin, str(path))


def load_registry(paths: str | Path | Sequence[str | Path]) -> Registry:
    """One registry from one or more tool files/folders. Each origin (a file, a catalogue's server) is its own
    source, so name collisions are namespaced; two files whose origins coincide (`a/tools.json`, `b/tools.json`)
    both stay, the second as `<folder>/<origin>`."""
    registry = Registry()
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        groups: dict[str, list[Tool]] = {}
        for tool in load_tools_file(path):
            groups.setdefault(tool.origin, []).append(tool)
        for origin, tools in groups.items():
            source = origin if origin not in registry.sources() else f"{Path(path).parent.name}/{origin}"
            registry.set_source(source, tools)
    return registry
