"""Tool files: MCP tools/list, OpenAI `tools`, BFCL function docs, MCP server catalogues.

The shape is detected from the content. One bad tool never sinks the rest: a tool that fails its checks (no name, a
schema that is not JSON Schema, a description over the limit, a name already taken in its source) is left out with a
warning that says where and why, and every other tool loads. A file that is not JSON, not a known shape, or holds no
usable tool at all is refused whole, with the reasons.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from nexus.errors import ToolLoadError
from nexus.registry.bfcl_types import to_json_schema
from nexus.registry.registry import Registry
from nexus.registry.tool import Tool, check_tool

log = logging.getLogger(__name__)
MAX_FILE_BYTES = 64 * 1024 * 1024
SHOWN_PROBLEMS = 3   # reasons quoted in the error of a file none of whose tools could be used


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
    if not items:
        return "mcp"
    for item in items:  # the first item that shows a shape names it: a malformed first tool does not hide the rest
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function" and isinstance(item.get("function"), dict):
            return "openai"
        if "inputSchema" in item or "input_schema" in item:
            return "mcp"
        if "parameters" in item and "name" in item:
            return "bfcl"
        if "function" in item and "question" in item:
            return "bfcl-questions"
        if isinstance(item.get("tools"), dict):
            return "catalogue"
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
            for fn in (record.get("function", []) if isinstance(record, dict) else [record]):
                if not isinstance(fn, dict) or fn.get("name") not in seen:
                    seen.add(fn.get("name") if isinstance(fn, dict) else None)
                    yield None, _from_function(fn)
    elif fmt == "catalogue":
        for server in data:
            blocks = server.get("tools") if isinstance(server, dict) else None
            if not isinstance(blocks, dict):
                yield None, server  # refused by check_tool as what it is, with its position
                continue
            for server_name, block in blocks.items():
                items = block.get("tools", []) if isinstance(block, dict) else [block]
                for item in items if isinstance(items, list) else [items]:
                    yield str(server_name), item


@dataclass(frozen=True)
class LoadedTools:
    """The tools of one source that passed their checks, and one message per tool left out (where and why)."""

    tools: list[Tool]
    skipped: list[str] = field(default_factory=list)


def read_tools(data: Any, origin: str, where: str) -> LoadedTools:
    """Check every tool of one parsed source: the good ones are kept, each bad one is left out with its reason (and
    logged as a warning); a source with items but no usable tool, or of an unknown shape, raises `ToolLoadError`.

    >>> loaded = read_tools([{"name": "ok", "inputSchema": {"type": "object"}}, {"description": "no name"}, {"name": "ok"}],
    ...                     "s", "t.json")
    >>> [t.name for t in loaded.tools], loaded.skipped
    (['ok'], ["t.json[1]: tool has no name (every tool needs a non-empty 'name')", "t.json[2] (tool 'ok'): the name is taken by position 0 (names must be unique per source)"])
    """
    fmt = detect_format(data)
    if fmt == "unknown":
        raise ToolLoadError(
            f"{where}: unrecognised tools file; expected an MCP tools/list, OpenAI tools or BFCL function list"
        )
    tools: list[Tool] = []
    skipped: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    for position, (sub_origin, raw) in enumerate(_raw_tools(data, fmt)):
        try:
            tool = check_tool(raw, sub_origin or origin, f"{where}[{position}]")
        except ToolLoadError as exc:
            skipped.append(str(exc))
            continue
        key = (tool.origin, tool.name)
        if key in seen:
            skipped.append(f"{where}[{position}] (tool {tool.name!r}): the name is taken by position {seen[key]} "
                           "(names must be unique per source)")
            continue
        seen[key] = position
        tools.append(tool)
    if skipped and not tools:
        more = f"; and {len(skipped) - SHOWN_PROBLEMS} more" if len(skipped) > SHOWN_PROBLEMS else ""
        raise ToolLoadError(f"{where}: no usable tool: {'; '.join(skipped[:SHOWN_PROBLEMS])}{more}")
    for problem in skipped:  # said once, here, for files, live servers and request tool lists alike
        log.warning("tool left out: %s", problem)
    return LoadedTools(tools, skipped)


def tools_from_data(data: Any, origin: str, where: str) -> list[Tool]:
    """The usable tools of one parsed source (`read_tools`, whose list of what it left out is logged)."""
    return read_tools(data, origin, where).tools


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
        kept: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in kept:
                log.warning("tool left out: %s: %r is defined again in another file of the folder; the first is kept",
                            path, tool.name)
                continue
            kept[tool.name] = tool
        return list(kept.values())
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
