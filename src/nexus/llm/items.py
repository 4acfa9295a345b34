"""List items the request does not give, taken out of a call: a small model writing a list of objects often repeats an
item or adds one of its own ("Create an entity for Dave, who is a designer." had written Dave and an invented "John"
into the knowledge graph). An item that repeats an earlier one goes; so does an item whose name the request never
states, when another item's it does (a list where no name is stated is left as it is).

>>> entities = {"type": "object", "properties": {"entities": {"type": "array", "items": {"type": "object",
...     "properties": {"name": {"type": "string"}, "entityType": {"type": "string"}}, "required": ["name"]}}}}
>>> stated_items({"entities": [{"name": "Dave", "entityType": "designer"}, {"name": "John", "entityType": "designer"}]},
...              entities, "Create an entity for Dave, who is a designer.")
{'entities': [{'name': 'Dave', 'entityType': 'designer'}]}
>>> stated_items({"entities": [{"name": "Ann"}, {"name": "Ann"}, {"name": "Bob"}]}, entities, "Add Ann and Bob")
{'entities': [{'name': 'Ann'}, {'name': 'Bob'}]}
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.llm.nested import field_schema, item_schema, properties

NAME_FIELDS = ("name", "entityName", "entity_name", "title")


def _name_field(schema: Mapping[str, Any]) -> str | None:
    """The field that names an item of an object list: a usual name field, else its first required string."""
    props = properties(schema)
    for name in NAME_FIELDS:
        if isinstance(props.get(name), Mapping) and props[name].get("type") in ("string", None):
            return name
    for name in schema.get("required") or []:
        if isinstance(props.get(name), Mapping) and props[name].get("type") == "string":
            return name
    return None


def _states(request: str, value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and bool(
        re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", request or "", re.I))


def stated_items(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str) -> dict[str, Any]:
    """`arguments` with each list of objects rid of repeated items and of items whose name the request does not
    state (when it states another item's)."""
    out = dict(arguments)
    for name, value in arguments.items():
        items = item_schema(field_schema(schema, name)) or {}
        if not isinstance(value, list) or not value or not all(isinstance(v, Mapping) for v in value):
            continue
        kept: list[Any] = []
        for item in value:
            if item not in kept:
                kept.append(item)
        field = _name_field(items)
        stated = [item for item in kept if field is not None and _states(request, item.get(field))]
        out[name] = _covered_dropped(stated or kept, items, request)
    return out


def _covered_dropped(items: list[Any], schema: Mapping[str, Any], request: str) -> list[Any]:
    """`items` without each one that has a required text the request does not state when another item states all of
    its required texts and every stated one of it ("Add a relation: Zoe knows Alice." had also written Alice -friend->
    Zoe beside Zoe -knows-> Alice); an item about other names stays ("Add Dave, a designer, and Ann": Ann's invented
    type does not take her out).

    >>> relations = {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"},
    ...              "relationType": {"type": "string"}}, "required": ["from", "to", "relationType"]}
    >>> _covered_dropped([{"from": "Alice", "to": "Zoe", "relationType": "friend"},
    ...                   {"from": "Zoe", "to": "Alice", "relationType": "knows"}], relations, "Zoe knows Alice")
    [{'from': 'Zoe', 'to': 'Alice', 'relationType': 'knows'}]
    """
    props = properties(schema)
    texts = [f for f in schema.get("required") or [] if isinstance(props.get(f), Mapping) and props[f].get("type") == "string"]
    if len(texts) < 2:
        return items
    said = [{item.get(f) for f in texts if _states(request, item.get(f))} for item in items]
    full = [all(_states(request, item.get(f)) for f in texts) for item in items]
    return [item for i, item in enumerate(items)
            if full[i] or not any(full[j] and said[i] <= said[j] for j in range(len(items)) if j != i)]
