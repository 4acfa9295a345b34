"""Compile tools to compact one-line signatures (what the LLM reads) and retrieval text (what the SLB embeds).

>>> from nexus.registry import Tool
>>> t = Tool("get_weather", "Get the current weather for a city. Uses a paid API.",
...          {"type": "object", "properties": {"city": {"type": "string"},
...           "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}, "w")
>>> compile_signature("get_weather", t)
'get_weather(city, unit?:c|f) Get the current weather…'
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.registry.tool import Tool

SHORT_TYPES = {"string": "str", "integer": "int", "number": "num", "boolean": "bool", "object": "obj", "array": "list", "null": "null"}
MAX_ENUM_VALUES = 3
MAX_OPTIONAL_SHOWN = 2  # the grammar built from the full schema still offers every parameter
FILLER = re.compile(r"^(this (function|tool|endpoint|api|method) (will )?|a (function|tool) (that|to) |(used|allows you) to )", re.IGNORECASE)
MAX_ENUM_CHARS = 16


def short_type(schema: Mapping[str, Any]) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = [str(v)[:MAX_ENUM_CHARS] for v in enum[:MAX_ENUM_VALUES]]
        return "|".join(shown) + ("|…" if len(enum) > MAX_ENUM_VALUES else "")
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "any")
    if kind == "array":
        return f"{short_type(schema.get('items') or {}) or 'str'}[]"
    if kind is None:
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return short_type(schema[key][0])
        return "any"
    return SHORT_TYPES.get(str(kind), str(kind))


def param_text(name: str, schema: Mapping[str, Any], optional: bool) -> str:
    kind = short_type(schema)
    return f"{name}{'?' if optional else ''}" + ("" if kind == "str" else f":{kind}")


def first_sentence(text: str, max_words: int) -> str:
    text = " ".join(text.split())
    match = re.search(r"(?<=[a-z0-9)\]])[.!?](\s|$)", text)
    sentence = text[: match.start()] if match else text
    words = sentence.split()
    return " ".join(words[:max_words]) + ("…" if len(words) > max_words else "")


def compile_signature(key: str, tool: Tool, max_words: int = 4) -> str:
    """`name(req, req:int, opt?:a|b) short description`: the LLM's view of a shortlisted tool.

    Strings carry no type mark; required parameters all show, optional ones up to MAX_OPTIONAL_SHOWN.
    """
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    params = [param_text(n, sub, False) for n, sub in props.items() if n in required]
    optional = [param_text(n, sub, True) for n, sub in props.items() if n not in required]
    params += optional[:MAX_OPTIONAL_SHOWN] + (["…"] if len(optional) > MAX_OPTIONAL_SHOWN else [])
    summary = first_sentence(FILLER.sub("", tool.description.strip()), max_words)
    return f"{key}({', '.join(params)}) {summary}".rstrip()


def split_identifier(name: str) -> str:
    """`getUserRepos.v2_list` -> `get user repos v2 list`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return " ".join(re.split(r"[\s._\-/:]+", spaced)).lower().strip()


def retrieval_text(key: str, tool: Tool, max_chars: int = 1000) -> str:
    """Richer text for the embedder and BM25: name words, description, parameter names and docs."""
    props = tool.input_schema.get("properties") or {}
    parts = []
    for name, sub in props.items():
        desc = sub.get("description", "") if isinstance(sub, Mapping) else ""
        parts.append(f"{split_identifier(name)} ({first_sentence(desc, 12)})" if desc else split_identifier(name))
    text = f"{split_identifier(key)}: {' '.join(tool.description.split())}"
    if parts:
        text += " Parameters: " + "; ".join(parts)
    return text[:max_chars]
