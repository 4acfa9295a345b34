"""The tables a server's database holds, learnt once when it connects, so that routing can read a request that names
rows by their table alone ("Show all notes whose title mentions Alice", "Delete note 3": no "table" or "database" word,
and no tool description says what the database holds).

A server offers a *table lister* when one of its tools takes no parameters and says it lists tables (mcp-server-sqlite's
`list_tables`: "List all tables in the SQLite database"). Nexus calls it once at connect time (a listing changes
nothing) and gives the names it returns to each of that server's tools (`Tool.tables`); a lister that fails or answers
with no names leaves the tools as they were. Only names that look like identifiers are kept, at most `MAX_NAMES`, and
SQLite's own (`sqlite_*`) are left out. Where the server also describes a table (a tool that takes one table name and
says it gives its schema or columns: `describe_table`), each table's columns are learnt the same way, so a statement's
grammar names only columns the table has (the model had written `WHERE note = 'Buy milk'` for "the note 'Buy milk'").

>>> lister = Tool("list_tables", "List all tables in the SQLite database", {"type": "object", "properties": {}}, "db")
>>> lists_tables(lister), lists_tables(Tool("list_directory", "List a folder", {"type": "object", "properties": {}}))
(True, False)
>>> listed("[{'name': 'notes'}, {'name': 'sqlite_sequence'}, {'name': 'tasks'}]")
{'notes': '', 'tasks': ''}
>>> list(listed('["users", "orders"]')), list(listed("users\\norders\\n")), listed("Error: no database")
(['users', 'orders'], ['users', 'orders'], {})
>>> describer = Tool("describe_table", "Get the schema information for a specific table", {"type": "object",
...     "properties": {"table_name": {"type": "string"}}, "required": ["table_name"]}, "db")
>>> describes_table(describer), describes_table(lister)
('table_name', None)
>>> listed("[{'cid': 0, 'name': 'id', 'type': 'INTEGER'}, {'cid': 1, 'name': 'title', 'type': 'text'}]")
{'id': 'INTEGER', 'title': 'TEXT'}
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from nexus.registry.tool import Tool

MAX_NAMES = 200  # names kept from one listing: tables, or one table's columns
_LISTS_TABLES = re.compile(r"\blists?\b.*\btables\b|^list_tables$", re.I)
_DESCRIBES = re.compile(r"describe|\bschema\b|\bcolumns\b|\bstructure\b", re.I)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_NAME_KEYS = ("name", "table", "table_name", "tbl_name", "tablename")


def lists_tables(tool: Tool) -> bool:
    """Whether `tool` takes no parameters and says (in its name or description) that it lists tables."""
    if tool.input_schema.get("properties") or tool.input_schema.get("required"):
        return False
    return bool(_LISTS_TABLES.search(tool.name) or _LISTS_TABLES.search(tool.description or ""))


def describes_table(tool: Tool) -> str | None:
    """The parameter a tool takes a table's name in, where that is all it takes and it says it describes the table
    (its schema, columns or structure); else None."""
    properties, required = tool.input_schema.get("properties") or {}, tool.input_schema.get("required") or []
    if len(properties) != 1 or list(properties) != list(required):
        return None
    name = next(iter(properties))
    if "table" not in name.lower() or (properties[name] or {}).get("type") != "string":
        return None
    return name if _DESCRIBES.search(f"{tool.name} {tool.description}") else None


def listed(text: str) -> dict[str, str]:
    """The names in a listing call's answer (tables, or a table's columns), each with the type its row declares ("" where
    it declares none): a JSON or Python list of names or of rows with a name field, else one name per line; {} when
    nothing in it looks like a list of names."""
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
        items = parsed
    elif parsed is None:
        items = [line.strip() for line in (text or "").splitlines()]
    else:
        items = []
    kept: dict[str, str] = {}
    for item in items:
        name = _row_name(item)
        if name and _IDENTIFIER.fullmatch(name) and not name.lower().startswith("sqlite_") and len(kept) < MAX_NAMES:
            declared = item.get("type") if isinstance(item, dict) else None
            kept.setdefault(name, declared.strip().upper() if isinstance(declared, str) else "")
    return kept


def _row_name(item: Any) -> str | None:
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        value = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
        return value.strip() if value else None
    if isinstance(item, (list, tuple)) and len(item) == 1 and isinstance(item[0], str):
        return item[0].strip()
    return None


def with_tables(tools: Sequence[Tool], tables: Mapping[str, Mapping[str, str]]) -> list[Tool]:
    """The tools with the tables of their server's database, each with its columns and their declared types ({} where
    unknown); unchanged when none were learnt."""
    learnt = {name: dict(columns) for name, columns in tables.items()}
    return [replace(tool, tables=learnt) for tool in tools] if learnt else list(tools)
