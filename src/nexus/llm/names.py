"""The names a request writes ("Record that Alice knows Bob", "Remember that Carol is a designer at Acme"), for the
fields of a list-of-objects parameter that hold one: an entity's `name`, a relation's `from` / `to`, an observation's
`entityName` (the knowledge-graph server's `create_entities`, `create_relations`, `add_observations`).

Why: nested string fields were free, and the small model filled them with names from nowhere: "Record that Alice works
at Acme as a relation." became `create_relations(from="Alice", to="Alex")`, "Remember that Carol is a software
engineer." `to="Eric"`, and "Add to Alice's entry that she likes tennis." `entityName="Tennis"`. Where the request
writes a name (a capitalised word or run of words, other than its first word and "I"), such a field takes one of them
(`grammars.grammar_schema`); a request that writes none leaves the fields free ("store a new entity called acme").

>>> request_names("Record that Alice knows Bob in the knowledge graph."), request_names("Add to Alice's entry that she likes tennis.")
(['Alice', 'Bob'], ['Alice'])
>>> request_names("Remember that Ada Lovelace wrote the first program. I think so."), request_names("Add a note.")
(['Ada Lovelace'], [])
>>> request_names("Add a relation: Bob manages Alice."), request_names("Create an entity named Globex of type company.")
(['Bob', 'Alice'], ['Globex'])
>>> request_names("Alice now lives in Berlin, please remember that.")
['Alice', 'Berlin']
>>> request_names("Alice no longer works at Acme, remove that link."), request_names("This is Bob's desk. Who is Eve?")
(['Alice', 'Acme'], ['Bob', 'Eve'])
>>> names_as_written({"entityNames": ["acme"], "n": 2, "kind": "acme"}, {}, "Remove Acme from my knowledge graph.")
{'entityNames': ['Acme'], 'n': 2, 'kind': 'acme'}
>>> names_as_written({"typeName": "ethernet"}, {"properties": {"typeName": {"enum": ["ethernet"]}}}, "Ethernet status")
{'typeName': 'ethernet'}
>>> [holds_name(n) for n in ("name", "from", "to", "entityName", "entityType", "relationType", "contents", "observations")]
[True, True, True, True, False, False, False, False]
>>> [holds_names(n) for n in ("entityNames", "names", "typeNames", "observations", "name")]
[True, True, False, False, False]
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.gate.memory import fact_before_ask
from nexus.llm.directions import direction
from nexus.llm.nested import each_object, field_schema, item_schema
from nexus.llm.words import words

# a capitalised word, or a run of them ("Ada Lovelace"), with a possessive's "'s" left out
_NAME = re.compile(r"(?<![\w'-])[A-Z][\w-]*(?:'[a-rt-z]\w*)?(?:\s+[A-Z][\w-]*(?:'[a-rt-z]\w*)?)*")
_SENTENCE = re.compile(r"(?:^|[.!?]\s+)\W*([A-Z][\w'-]*)")
_KIND = frozenset(("type", "kind", "category", "class"))
# a sentence that opens with its subject and a verb of what it is, does or has ("Alice no longer works at Acme",
# "Bob is Alice's manager"): its first word is the subject's name, unless a pronoun, determiner or question word
_STATES = re.compile(r"[A-Z][\w-]*\s+(?:is|was|has|had|now|no|still|never|also|works|worked|lives|lived|likes|liked|"
                     r"loves|knows|knew|manages|managed|reports|speaks|owns|owned|moved|joined|left|leads|led|plays|"
                     r"studies|teaches|prefers|married|became|uses)\b(?!')")
_NOT_SUBJECT = frozenset("it this that these those there here he she they we you what who which where when why how my "
                         "your our his her their its all each every some any one please thanks thank hi hello "
                         "also just then so and but or if".split())


def request_names(request: str) -> list[str]:
    """The names the request writes, in order, each once: capitalised words and runs of them, not a sentence's first
    word (unless it follows a colon, or opens a statement about itself: `_STATES`) nor "I"."""
    openings = {m.start(1) for m in _SENTENCE.finditer(request or "")
                if not (_STATES.match(request, m.start(1)) and m.group(1).lower() not in _NOT_SUBJECT)}
    if fact_before_ask(request):  # "Alice now lives in Berlin, please remember that.": the fact opens with its subject
        openings.discard(len(request) - len(request.lstrip(" \t\n\"'(")))
    names: list[str] = []
    for match in _NAME.finditer(request or ""):
        text, start = match.group(0), match.start()
        if start in openings:  # "Remember that ...", "I think so.": the sentence's first word is no name
            text = text.split(None, 1)[1] if " " in text else ""
        if text and text != "I" and not text.startswith("I'") and text not in names:
            names.append(text)
    return names


def holds_name(field: str) -> bool:
    """Whether an object's field holds the name of something: `name`, `entityName`, a relation's `from` / `to`; not a
    type or kind (`entityType`, `relationType`)."""
    parts = set(words(field))
    return not parts & _KIND and ("name" in parts or direction(field) is not None)


def holds_names(field: str) -> bool:
    """Whether a list of strings holds names of things (`entityNames`, `names`), not of types or kinds."""
    parts = set(words(field))
    return "names" in parts and not parts & _KIND


def fact_subject(request: str) -> str | None:
    """The name a fact stated before the ask to keep it opens with ("Acme moved to Lyon - remember that." -> "Acme"):
    what the fact is about.

    >>> fact_subject("Acme moved to Lyon - remember that."), fact_subject("Remember that Acme moved to Lyon.")
    ('Acme', None)
    """
    fact = fact_before_ask(request)
    names = request_names(request) if fact else []
    return names[0] if names and (fact or "").startswith(names[0]) else None


def name_fields(items: dict, names: list[str], subject: str | None = None) -> None:
    """Each string field of a list's object `items` that holds a name (`holds_name`) takes one of `names` (in place;
    nothing when the request writes none, or the field already lists its values); a name field that is not one end of
    a relation takes the `subject` alone when given (`fact_subject`: the entity the stated fact is about)."""
    props = items.get("properties") if isinstance(items, dict) else None
    if not names or not isinstance(props, dict):
        return
    for field, sub in props.items():
        if isinstance(sub, dict) and sub.get("type") in ("string", None) and "enum" not in sub and holds_name(field):
            sub["enum"] = [subject] if subject and direction(field) is None else list(names)
            sub.pop("pattern", None)
            sub.pop("format", None)


def names_as_written(arguments: Any, schema: Any, request: str) -> Any:
    """`arguments` with each value of a field that holds a name (`holds_name`: `name`, `entityNames`, a relation's ends;
    at the top level or in a list's objects) spelt as the request writes it when it is one of the request's names in
    other letter case ("Remove Acme from my knowledge graph." had deleted the entity "acme", which the graph does not
    hold: its names are case-sensitive). A field with listed choices (an enum) is left as it is."""
    written = {n.lower(): n for n in request_names(request)}
    if not written or not isinstance(arguments, dict):
        return arguments

    def spelt(value: Any, sub: Mapping[str, Any]) -> Any:
        if isinstance(value, list):
            items = item_schema(sub) or {}
            return value if "enum" in items else [spelt(v, items) for v in value]
        return written.get(value.lower(), value) if isinstance(value, str) and "enum" not in sub else value

    def fix(item: Mapping[str, Any], sub: Mapping[str, Any]) -> dict[str, Any]:
        return {k: spelt(v, field_schema(sub, k)) if holds_name(k) or "names" in words(k) else v for k, v in item.items()}

    return each_object(arguments, schema, fix)
