"""The relation a request states between two of its names ("Bob manages Alice", "Alice works at Acme") written into a
relation's type, where the tool takes (from, to, relation type) triples: the knowledge-graph server's
`create_relations(relations=[{from, to, relationType}])`. The small model fills the type with a word of the schema
("person", "object") instead of the words between the two names.

>>> triple = {"type": "object", "properties": {"relations": {"type": "array", "items": {"type": "object", "properties": {
...     "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}}}}}}
>>> stated_relation({"relations": [{"from": "Bob", "to": "Alice", "relationType": "object"}]}, triple,
...                 "Add a relation: Bob manages Alice.")
{'relations': [{'from': 'Bob', 'to': 'Alice', 'relationType': 'manages'}]}
>>> stated_relation({"relations": [{"from": "Alice", "to": "Bob", "relationType": "person"}]}, triple,
...                 "Record that Alice is friends with Bob in the knowledge graph.")
{'relations': [{'from': 'Alice', 'to': 'Bob', 'relationType': 'friends with'}]}
>>> stated_relation({"relations": [{"from": "Alice", "to": "Acme", "relationType": "works at"}]}, triple,
...                 "Link Alice to Acme with the relation 'works at'.")  # written as the request says: kept
{'relations': [{'from': 'Alice', 'to': 'Acme', 'relationType': 'works at'}]}
>>> stated_relation({"relations": [{"from": "Alice", "to": "Acme", "relationType": "knows"}]}, triple,
...                 "Link Alice to Acme.")  # nothing stated between them: as written
{'relations': [{'from': 'Alice', 'to': 'Acme', 'relationType': 'knows'}]}
>>> stated_relation({"relations": [{"from": "Bob", "to": "Bob", "relationType": "object"}]}, triple,
...                 "Record in the knowledge graph that Bob works at Acme.")  # one thing twice: the two it names
{'relations': [{'from': 'Bob', 'to': 'Acme', 'relationType': 'works at'}]}
>>> stated_relation({"relations": [{"from": "Alice", "to": "Leo", "relationType": "open"}]}, triple,
...                 "In the knowledge graph, record that Leo belongs to Alice.")  # the other way round
{'relations': [{'from': 'Leo', 'to': 'Alice', 'relationType': 'belongs to'}]}
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.llm.directions import direction
from nexus.llm.names import request_names
from nexus.llm.nested import each_object, field_schema, item_schema, properties, string_fields
from nexus.llm.words import words
from nexus.slb.lexical import STOPWORDS

MAX_WORDS = 4   # a relation stated between two names: "manages", "works at", "is friends with"
_COPULA = re.compile(r"^(?:is|are|was|were)\s+", re.I)


def _fields(schema: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(source, target, relation type) field names of an object schema, when it has exactly one of each."""
    strings = string_fields(schema)
    source = [n for n in strings if direction(n) == "source"]
    target = [n for n in strings if direction(n) == "target"]
    kind = [n for n in strings if {"relation", "relationship", "predicate"} & set(words(n))]
    return (source[0], target[0], kind[0]) if len(source) == len(target) == len(kind) == 1 else None


def _between(request: str, first: str, second: str) -> str | None:
    """The words the request writes between `first` and `second` (in that order), when there are 1 to MAX_WORDS."""
    match = re.search(rf"(?<!\w){re.escape(first)}(?!\w)\s+(?P<words>[\w' -]+?)\s+(?<!\w){re.escape(second)}(?!\w)",
                      request, re.I)
    if match is None:
        return None
    said = _COPULA.sub("", match.group("words").strip())
    content = [w for w in said.lower().split() if w not in STOPWORDS]  # "Link Alice to Acme": no relation stated
    return said if content and len(said.split()) <= MAX_WORDS else None


def _fix(item: Mapping[str, Any], schema: Mapping[str, Any], request: str) -> Mapping[str, Any]:
    fields = _fields(schema)
    if fields is None:
        return item
    source, target, kind = fields
    ends = item.get(source), item.get(target)
    if not all(isinstance(v, str) and v.strip() for v in ends):
        return item
    names = request_names(request)
    if ends[0].strip().lower() == ends[1].strip().lower() and len(names) == 2:
        # a thing related to itself, where the request names two: the two, the way round it writes them ("Record in
        # the knowledge graph that Bob works at Acme." had written Bob -> Bob)
        item = {**item, source: names[0], target: names[1]}
        ends = names[0], names[1]
    said = _between(request, ends[0].strip(), ends[1].strip())
    written = item.get(kind)
    if isinstance(written, str) and words(written) and set(words(written)) <= set(words(request)):
        return item  # the type written is the request's own words
    if said is None and (back := _between(request, ends[1].strip(), ends[0].strip())) is not None:
        # the two the other way round from how the request relates them ("Leo belongs to Alice" had been written
        # Alice -open-> Leo): as the request writes them
        return {**item, source: ends[1], target: ends[0], kind: back}
    return item if said is None else {**item, kind: said}  # nothing stated between the two: as written


def stated_relation(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str) -> dict[str, Any]:
    """`arguments` with each (from, to, type) triple's type set to the words the request writes between its two
    names, unless the type written is in the request's own words; at the top level or in a list of triples."""
    return each_object(arguments, schema, lambda item, sub: _fix(item, sub, request))


def relates(schema: Mapping[str, Any]) -> bool:
    """Whether a tool takes (from, to, relation type) triples, at the top level or as a list's items."""
    if _fields(schema) is not None:
        return True
    return any(_fields(items) is not None for items in (item_schema(field_schema(schema, n)) for n in properties(schema))
               if items is not None)


def self_related(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The name a (from, to, type) triple of the call relates to itself, if one does ("Remember that Frank is a
    plumber." had called `create_relations(Frank -> Frank, "friend")`): a write no request asks for.

    >>> triple = {"type": "object", "properties": {"relations": {"type": "array", "items": {"type": "object", "properties": {
    ...     "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}}}}}}
    >>> self_related({"relations": [{"from": "Frank", "to": "frank", "relationType": "friend"}]}, triple)
    'Frank'
    >>> self_related({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]}, triple) is None
    True
    """
    found: list[str] = []

    def check(item: Mapping[str, Any], sub: Mapping[str, Any]) -> Mapping[str, Any]:
        fields = _fields(sub)
        if fields is not None:
            ends = item.get(fields[0]), item.get(fields[1])
            if all(isinstance(v, str) and v.strip() for v in ends) and ends[0].strip().lower() == ends[1].strip().lower():
                found.append(ends[0])
        return item

    each_object(arguments, schema, check)
    return found[0] if found else None
