"""The statement a request asks to record ("… that Alice speaks French", "the observation 'likes jazz'") written into
a list of statements the model left empty or filled with words the request does not say: the knowledge-graph
server's `add_observations(observations=[{entityName, contents}])`, `create_entities(entities=[{…, observations}])`.
The small model wrote `contents: []` for "Add to Alice's entry that she plays the piano." and
`["Alice's name in French"]` for "Add the observation that Alice speaks French to Alice's entry.".

>>> notes = {"type": "object", "properties": {"observations": {"type": "array", "items": {"type": "object",
...     "properties": {"entityName": {"type": "string"}, "contents": {"type": "array", "items": {"type": "string"}}}}}}}
>>> stated_statements({"observations": [{"entityName": "Alice", "contents": []}]}, notes,
...                   "Add to Alice's entry that she plays the piano.")
{'observations': [{'entityName': 'Alice', 'contents': ['she plays the piano']}]}
>>> stated_statements({"observations": [{"entityName": "Alice", "contents": ["jazz"]}]}, notes,
...                   "Add the observation 'likes jazz' to the entity Alice.")
{'observations': [{'entityName': 'Alice', 'contents': ['likes jazz']}]}
>>> deletions = {"type": "object", "properties": {"deletions": {"type": "array", "items": {"type": "object",
...     "properties": {"entityName": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}}}}}}}
>>> stated_statements({"deletions": [{"entityName": "Alice", "observations": ["Tennis"]}]}, deletions,
...                   "Remove the observation that Alice likes tennis.")  # a part: the clause, as the graph keeps it
{'deletions': [{'entityName': 'Alice', 'observations': ['likes tennis']}]}
>>> stated_statements({"observations": [{"entityName": "Alice", "contents": ["likes hiking"]}]}, notes,
...                   "Add that Alice likes hiking.")  # the request's own words: kept
{'observations': [{'entityName': 'Alice', 'contents': ['likes hiking']}]}
>>> stated_statements({"observations": [{"entityName": "Acme", "contents": ["Acme"]}]}, notes,
...                   "Add an observation to Acme that it has 50 employees.")  # only the name: the statement
{'observations': [{'entityName': 'Acme', 'contents': ['it has 50 employees']}]}
>>> stated_statements({"observations": [{"entityName": "Alice", "contents": ["Alice", "Berlin"]}]}, notes,
...                   "Alice now lives in Berlin, please remember that.")  # the fact stated before the ask
{'observations': [{'entityName': 'Alice', 'contents': ['now lives in Berlin']}]}
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.gate.memory import asks_to_forget, fact_before_ask, removes_from_memory
from nexus.llm.nested import each_object, field_schema, item_schema
from nexus.llm.relations import relates
from nexus.llm.words import words
from nexus.registry import Tool

STATEMENT_NAMES = {"observation", "observations", "contents", "facts", "notes", "statements"}
MIN_WORDS = 2
# not `choices._QUOTED`: an observation may be long, and the apostrophe inside a word ("Alice's") opens no quote
_QUOTED = re.compile(r"""(?<!\w)(?:'(?P<single>[^']{2,}?)'|"(?P<double>[^"]{2,}?)")(?!\w)""")
_THAT = re.compile(r"\bthat\s+(?P<clause>[^.!?]+)", re.I)
# where the clause says where it goes rather than what it says: "… to Alice's entry", "… in the knowledge graph"
_PLACE = re.compile(r"\s+(?:to|in|into|on|for|from)\s+(?:(?:the|my|a|an|[\w-]+'s)\s+)*(?:[\w-]+\s+){0,2}?"
                    r"(?:entry|entity|record|knowledge\s+graph|graph|memory|profile|node)\b.*$", re.I)
_STARTS_PLACE = re.compile(r"^(?:to|in|into|on|for|from|is|was)\b", re.I)


def takes_statements(schema: Mapping[str, Any]) -> bool:
    """Whether a tool takes statements about a thing: a list of objects with a list of strings named as statements
    (`deletions: [{entityName, observations}]`), not only things by name (`entityNames`).

    >>> takes_statements({"properties": {"deletions": {"type": "array", "items": {"type": "object", "properties": {
    ...     "entityName": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}}}}}}})
    True
    >>> takes_statements({"properties": {"entityNames": {"type": "array", "items": {"type": "string"}}}})
    False
    """
    for name in (schema.get("properties") or {}):
        items = item_schema(field_schema(schema, name))
        if items is not None and any(_statement_list(inner, items) for inner in (items.get("properties") or {})):
            return True
    return False


def _statement_list(name: str, schema: Mapping[str, Any]) -> bool:
    """Whether field `name` of an object `schema` is a list of strings named as statements ("observations", "contents")."""
    items = item_schema(field_schema(schema, name))
    return items is not None and items.get("type") == "string" and bool(set(words(name)) & STATEMENT_NAMES)


def forgets_the_thing(tool: Tool, request: str) -> str | None:
    """Why a call must not run (None: it may): the request asks to forget a fact about something ("Forget that Alice
    speaks Spanish.") and the tool removes whole things from a memory, neither statements about them nor relations
    between them: `delete_entities(["Alice", "Spanish"])` had deleted Alice.

    >>> kill = Tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph",
    ...             {"type": "object", "properties": {"entityNames": {"type": "array", "items": {"type": "string"}}}}, "m")
    >>> forgets_the_thing(kill, "Forget that Alice speaks Spanish."), forgets_the_thing(kill, "Forget Alice.")
    ('delete_entities removes whole things, and the request asks to forget a fact about one', None)
    """
    if not (asks_to_forget(request) and request_statement(request) and removes_from_memory(tool.description)):
        return None
    if takes_statements(tool.input_schema) or relates(tool.input_schema):
        return None
    return f"{tool.name} removes whole things, and the request asks to forget a fact about one"


def request_statement(request: str) -> tuple[str, bool] | None:
    """(the one quoted text of the request, True), else (the clause after "that" without where it goes, False);
    None when the request states neither (or quotes several texts)."""
    quoted = [m.group("single") or m.group("double") for m in _QUOTED.finditer(request)]
    if len(quoted) == 1:
        return quoted[0].strip(), True
    before = fact_before_ask(request) if not quoted else None
    if before is not None:  # "Alice now lives in Berlin, please remember that.", "…, note that down."
        return before, False
    match = _THAT.search(request)
    if match is None or quoted:
        return None
    clause = _PLACE.sub("", match.group("clause")).strip(" ,;:")
    if len(clause.split()) < MIN_WORDS or _STARTS_PLACE.match(clause):
        return None
    return clause, False


def _unsaid(items: list[Any], request: str, statement: str, quoted: bool) -> bool:
    """The written statements leave the stated one out: none, one with words the request does not use, or (for a
    quoted statement, which is meant word for word) a part of it only. A clause written without its subject
    ("likes hiking" for "… that Alice likes hiking") is the request's words: kept."""
    if not items:
        return True
    said = set(words(request))
    for item in items:
        if not isinstance(item, str):
            return False
        part = item.strip().lower() != statement.lower() and item.strip().lower() in statement.lower()
        # a part of a clause that leaves more than its subject out ("tennis" for "Alice likes tennis") says less
        short = part and len(words(item)) < len(words(statement)) - 1
        if not set(words(item)) <= said or (quoted and part) or short:
            return True
    return False


def _fix(item: Mapping[str, Any], schema: Mapping[str, Any], request: str, stated: tuple[str, bool]) -> Mapping[str, Any]:
    out = dict(item)
    # a statement that is only the name of what it is about says nothing ("Add an observation to Acme that it has 50
    # employees." had written contents ["Acme"])
    named = {v.strip().lower() for k, v in item.items() if isinstance(v, str) and "name" in words(k) and v.strip()}
    for name, value in item.items():
        if _statement_list(name, schema) and isinstance(value, list) and (
                _unsaid(value, request, *stated) or any(isinstance(v, str) and v.strip().lower() in named for v in value)):
            out[name] = [_without_subject(stated[0], item) if not stated[1] else stated[0]]
    return out


def _without_subject(clause: str, item: Mapping[str, Any]) -> str:
    """A clause whose subject is the entity the statement is about, without it ("likes tennis" for "Alice likes
    tennis" in Alice's entry: how the graph keeps its observations); else as it is."""
    names = [v for k, v in item.items() if isinstance(v, str) and "name" in words(k) and v.strip()]
    for name in names:
        if clause.lower().startswith(name.strip().lower() + " ") and len(clause.split()) > len(name.split()) + 1:
            return clause[len(name.strip()):].strip()
    return clause


def stated_statements(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str) -> dict[str, Any]:
    """`arguments` with each list of statements (a list of strings named observations, contents, facts …), at the top
    level or in a list of objects, set to the statement the request states (`request_statement`) when what the model
    wrote leaves it out (`_unsaid`); anything else as written."""
    stated = request_statement(request)
    if stated is None:
        return dict(arguments)
    said = fact_before_ask(request) or request  # "…, note that down.": the ask's words are not the fact's
    return each_object(arguments, schema, lambda item, sub: _fix(item, sub, said, stated))
