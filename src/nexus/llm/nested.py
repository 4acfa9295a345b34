"""The objects a call holds, for the conventions that mend nested values (`replacements`, `items`, `relations`,
`statements`): an object schema's fields, and each object of a call — the arguments themselves and every item of a
list-of-objects parameter — with the schema that describes it.

>>> schema = {"type": "object", "properties": {"edits": {"type": "array", "items": {"type": "object",
...     "properties": {"old": {"type": "string"}, "n": {"type": "integer"}}}}}}
>>> string_fields(schema["properties"]["edits"]["items"])
['old']
>>> each_object({"edits": [{"old": "a"}, "x"]}, schema, lambda item, sub: {**item, "seen": sorted(properties(sub))})
{'edits': [{'old': 'a', 'seen': ['n', 'old']}, 'x'], 'seen': ['edits']}
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

Fix = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


def properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object schema's `properties` (empty when it has none or they are malformed)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props if isinstance(props, Mapping) else {}


def field_schema(schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The schema of one field (empty when it is missing or malformed)."""
    sub = properties(schema).get(name)
    return sub if isinstance(sub, Mapping) else {}


def item_schema(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `items` schema of an array schema, when it is one."""
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None


def string_fields(schema: Mapping[str, Any]) -> list[str]:
    """The names of an object schema's string fields (a field with no type counted as one)."""
    return [n for n, sub in properties(schema).items() if isinstance(sub, Mapping) and sub.get("type") in ("string", None)]


def each_object(arguments: Mapping[str, Any], schema: Mapping[str, Any], fix: Fix) -> dict[str, Any]:
    """`arguments` with `fix(object, its schema)` applied to each list-of-objects parameter's object items, then to
    the arguments themselves; anything else as written."""
    out = dict(arguments)
    for name, value in arguments.items():
        items = item_schema(field_schema(schema, name))
        if items is not None and isinstance(value, list):
            out[name] = [dict(fix(v, items)) if isinstance(v, Mapping) else v for v in value]
    return dict(fix(out, schema))
