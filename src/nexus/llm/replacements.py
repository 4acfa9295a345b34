"""A replacement the request states ("change Acme to Globex", "replace the word milk with bread") written into the
tool's pair of old / new text parameters, at the top level or in each item of a list of edits (the filesystem
server's `edit_file(path, edits=[{oldText, newText}])`). The small model fills such nested pairs badly (`oldText: "G"`
for "In notes.txt, change Acme to Globex."), and a wrong old text makes the edit fail or change the wrong thing.

>>> edit = {"type": "object", "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {
...     "type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}}}}}
>>> stated_replacement({"path": "notes.txt", "edits": [{"oldText": "G", "newText": "Globex"}]}, edit,
...                    "In notes.txt, change Acme to Globex.")
{'path': 'notes.txt', 'edits': [{'oldText': 'Acme', 'newText': 'Globex'}]}
>>> stated_replacement({"old": "x", "new": "y"}, {"properties": {"old": {"type": "string"}, "new": {"type": "string"}}},
...                    "Replace the word 'milk' with \\"bread\\" in list.txt")
{'old': 'milk', 'new': 'bread'}
>>> money = {"properties": {"from_currency": {"type": "string"}, "to_currency": {"type": "string"}}}
>>> stated_replacement({"from_currency": "USD", "to_currency": "EUR"}, money, "Change 100 USD to EUR")
{'from_currency': 'USD', 'to_currency': 'EUR'}
>>> stated_replacement({"path": "a.txt", "edits": []}, edit, "Change Acme to Globex in a.txt")
{'path': 'a.txt', 'edits': [{'oldText': 'Acme', 'newText': 'Globex'}]}
>>> twice = [{"oldText": "oat milk", "newText": "milk"}] * 2
>>> stated_replacement({"path": "n.txt", "edits": twice}, edit, "In n.txt, replace 'milk' with 'oat milk'.")
{'path': 'n.txt', 'edits': [{'oldText': 'milk', 'newText': 'oat milk'}]}
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.llm.nested import properties, string_fields
from nexus.llm.words import words

# a pair's first name words (not from / to: `from_currency`, `to_date` are no text to replace)
OLD = frozenset("old original search find".split())
NEW = frozenset("new replacement replace".split())
# "change X to Y", "replace (the word) X with Y", "swap X for Y": X and Y end at a comma, " in ", or the end
_REPLACE = re.compile(
    r"\b(?:change|replace|swap|substitute|switch)\s+(?:(?:the|every|each|all)\s+)?(?:(?:words?|texts?|phrases?|strings?|"
    r"occurrences?(?:\s+of)?)\s+)?(?P<old>.+?)\s+(?:to|with|into|for|by)\s+(?P<new>.+?)\s*(?:[,;]|\s+in\s+|[.!?]?\s*$)",
    re.I)
_QUOTES = "'\"`\u2018\u2019\u201c\u201d"


def request_replacement(request: str) -> tuple[str, str] | None:
    """The (old, new) text the request says to replace, quotes taken off; None unless it states exactly one.

    >>> request_replacement("Change 'Acme Corp' to \\"Globex\\", please"), request_replacement("Switch to dark mode")
    (('Acme Corp', 'Globex'), None)
    """
    found = [(m.group("old").strip(_QUOTES), m.group("new").strip(_QUOTES)) for m in _REPLACE.finditer(request or "")]
    found = [(old, new) for old, new in found if old and new and old != new]
    return found[0] if len(found) == 1 else None


def _pair(schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """The names of an object schema's old-text and new-text string parameters, when it has one of each."""
    strings = string_fields(schema)
    old = [n for n in strings if words(n) and words(n)[0] in OLD]
    new = [n for n in strings if words(n) and words(n)[0] in NEW]
    return (old[0], new[0]) if len(old) == 1 and len(new) == 1 and old != new else None


def takes_replacement(schema: Mapping[str, Any]) -> bool:
    """Whether a tool has an old / new text pair, at the top level or in the items of a list (`edit_file`'s edits).

    >>> takes_replacement({"properties": {"edits": {"type": "array", "items": {"properties": {
    ...     "oldText": {"type": "string"}, "newText": {"type": "string"}}}}}})
    True
    >>> takes_replacement({"properties": {"path": {"type": "string"}, "content": {"type": "string"}}})
    False
    """
    if _pair(schema) is not None:
        return True
    return any(isinstance(sub, Mapping) and sub.get("type") == "array" and isinstance(sub.get("items"), Mapping)
               and _pair(sub["items"]) is not None for sub in properties(schema).values())


def stated_replacement(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str) -> dict[str, Any]:
    """`arguments` with the request's one replacement in the tool's old / new pair (top level, or the single item of
    a list of such pairs: the list holds that one edit, whatever the model wrote); unchanged when the request states none
    or the tool has no such pair. Held-out set 53: "In notes.txt, change 'milk' to 'almond milk'." had written the edit
    swapped, then the right one, and the server refused the first.

    >>> schema = {"properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {"properties": {
    ...     "oldText": {"type": "string"}, "newText": {"type": "string"}}}}}}
    >>> stated_replacement({"path": "n.txt", "edits": [{"oldText": "almond milk", "newText": "milk"},
    ...     {"oldText": "milk", "newText": "almond milk"}]}, schema, "In n.txt, change 'milk' to 'almond milk'.")
    {'path': 'n.txt', 'edits': [{'oldText': 'milk', 'newText': 'almond milk'}]}
    """
    out = dict(arguments)
    stated = request_replacement(request)
    if stated is None:
        return out
    top = _pair(schema)
    if top is not None:
        out.update(zip(top, stated))
        return out
    for name, sub in properties(schema).items():
        items = sub.get("items") if isinstance(sub, Mapping) and sub.get("type") == "array" else None
        pair = _pair(items) if isinstance(items, Mapping) else None
        value = out.get(name, [])
        if pair is None or not isinstance(value, list):
            continue
        item = dict(value[0]) if value and isinstance(value[0], Mapping) else {}
        item.update(zip(pair, stated))
        out[name] = [item]
    return out
