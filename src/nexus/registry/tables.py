"""The tables a server's database holds, learnt once when it connects, so that routing can read a request that names
rows by their table alone ("Show all notes whose title mentions Alice", "Delete note 3": no "table" or "database" word,
and no tool description says what the database holds).

A server offers a *table lister* when one of its tools takes no parameters and says it lists tables (mcp-server-sqlite's
`list_tables`: "List all tables in the SQLite database"). Nexus calls it once at connect time (a listing changes
nothing) and gives the names it returns to each of that server's tools (`Tool.tables`); a lister that fails or answers
with no names leaves the tools as they were. Only names that look like identifiers are kept, at most `MAX_TABLES`, and
SQLite's own (`sqlite_*`) are left out.

>>> lister = Tool("list_tables", "List all tables in the SQLite database", {"type": "object", "properties": {}}, "db")
>>> lists_tables(lister), lists_tables(Tool("list_directory", "List a folder", {"type": "object", "properties": {}}))
(True, False)
>>> table_names("[{'name': 'notes'}, {'name': 'sqlite_sequence'}, {'name': 'tasks'}]")
('notes', 'tasks')
>>> table_names('["users", "orders"]'), table_names("users\\norders\\n"), table_names("Error: no database")
(('users', 'orders'), ('users', 'orders'), ())
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from typing import Any, Sequence

from nexus.registry.tool import Tool

MAX_TABLES = 200
_LISTS_TABLES = re.compile(r"\blists?\b.*\btables\b|^list_tables$", re.I)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_NAME_KEYS = ("name", "table", "table_name", "tbl_name", "tablename")


def lists_tables(tool: Tool) -> bool:
    """Whether `tool` takes no parameters and says (in its name or description) that it lists tables."""
    properties = tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
    if properties or tool.input_schema.get("required"):
        return False
    return bool(_LISTS_TABLES.search(tool.name) or _LISTS_TABLES.search(tool.description or ""))


def table_names(text: str) -> tuple[str, ...]:
    """The table names in a lister's answer: a JSON or Python list of names or of rows with a name field, else one
    name per line; () when nothing in it looks like a list of names."""
    parsed: Any = None
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(text)
            break
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    if isinstance(parsed, dict):
        parsed = next((v for v in parsed.values() if isinstance(v, list)), [])
    if isinstance(parsed, list):
        names = [_row_name(item) for item in parsed]
    elif parsed is None:
        names = [line.strip() for line in (text or "").splitlines()]
    else:
        names = []
    kept = [n for n in names if n and _IDENTIFIER.fullmatch(n) and not n.lower().startswith("sqlite_")]
    return tuple(dict.fromkeys(kept))[:MAX_TABLES]


def _row_name(item: Any) -> str | None:
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        value = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
        return value.strip() if value else None
    if isinstance(item, (list, tuple)) and len(item) == 1 and isinstance(item[0], str):
        return item[0].strip()
    return None


def with_tables(tools: Sequence[Tool], tables: Sequence[str]) -> list[Tool]:
    """The tools with the tables of their server's database (unchanged when none were learnt)."""
    return [replace(tool, tables=tuple(tables)) for tool in tools] if tables else list(tools)
