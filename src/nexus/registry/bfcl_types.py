"""BFCL function docs use Python-ish type names; map them to JSON Schema (BFCL's own mapping)."""

from __future__ import annotations

from typing import Any

TYPE_MAP = {
    "dict": "object", "HashMap": "object", "float": "number", "double": "number",
    "tuple": "array", "list": "array", "ArrayList": "array", "any": "string",
    "long": "integer", "int": "integer", "str": "string", "bool": "boolean",
    "String": "string", "Boolean": "boolean", "Array": "array", "char": "string",
    "byte": "integer", "short": "integer", "Set": "array",
}


def to_json_schema(node: Any) -> Any:
    """Return a copy of a BFCL parameter tree with JSON Schema type names.

    >>> to_json_schema({"type": "dict", "properties": {"x": {"type": "float"}}})
    {'type': 'object', 'properties': {'x': {'type': 'number'}}}
    """
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            out[key] = TYPE_MAP.get(value, value)
        elif key == "type" and isinstance(value, list):
            out[key] = [TYPE_MAP.get(v, v) if isinstance(v, str) else v for v in value]
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    # BFCL sometimes marks optional params by a `default` and leaves `required` absent: fine as is.
    return out
