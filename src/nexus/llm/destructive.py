"""A call that may destroy data runs only with values the request states.

Servers mark such tools (MCP `destructiveHint`): `write_file` overwrites, `delete_relations` deletes, `move_file`
moves. A small model that picks one of them for a request it does not fit fills the arguments it has to invent:
"Move notes.txt into the backups folder." had called `write_file(path: "notes.txt", content: "This is a backup of
...")` and overwritten the file; "Delete the note with id 2 from the notes table." had called the knowledge graph's
`delete_relations(from: "1", to: "2", relationType: "insert")`. A wrong read costs a turn; a wrong write loses
data, so every value such a call writes must be one the request (or the turn it leans on) states
(`stated.stated`, with two thirds of a text's words said rather than half: "A backup copy" shares only "backup"
with "Move notes.txt into backups"), and a file name the request writes is not what a content or text parameter
holds ("Rename notes.txt to old_notes.txt" had called `write_file(content: "old_notes.txt")`). Booleans are the
tool's switches, not values (`dryRun`), and are not looked up.

A tool that runs INSERT / UPDATE / DELETE statements changes data whether or not its server says so (mcp-server-
sqlite's `write_query` carries no hint): the values its statement writes — quoted strings and numbers — must be
stated too ("Add a note saying 'buy milk' to the notes table." had written `VALUES (1000000, 1000000, …)`).

>>> from nexus.registry import Tool
>>> write = Tool("write_file", "Write a file", {"type": "object", "properties": {"path": {"type": "string"},
...     "content": {"type": "string"}}}, "fs", annotations={"readOnlyHint": False, "destructiveHint": True})
>>> unstated_change(write, {"path": "todo.txt", "content": "buy bread"}, "Create todo.txt containing 'buy bread'.")
>>> unstated_change(write, {"path": "notes.txt", "content": "A backup copy"}, "Move notes.txt into backups.")
"write_file may destroy data (its server says so) and the request does not state its content 'A backup copy'"
>>> sql = Tool("write_query", "Execute an INSERT, UPDATE, or DELETE query", {"type": "object", "properties": {
...     "query": {"type": "string", "description": "SQL query to execute"}}}, "db")
>>> unstated_change(sql, {"query": "DELETE FROM notes WHERE id = 2"}, "Delete the note with id 2 from the notes table.")
>>> unstated_change(sql, {"query": "INSERT INTO notes (title) VALUES (1000000)"}, "Add a note saying 'buy milk'.")
"write_query writes data and the request does not state the value '1000000' its statement holds"
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

from nexus.gate.evidence import is_sql_parameter, runs_sql
from nexus.llm.names import holds_names
from nexus.llm.replacements import request_replacement, takes_replacement
from nexus.llm.sql import unstated_literals
from nexus.llm.stated import TEXT_PARAMETER, request_paths, stated, words_said
from nexus.llm.words import words
from nexus.registry import Tool


def written_values(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """(parameter name, value, its schema) for every string and number inside `arguments`, through nested objects
    and lists (an item of a list is named by the list's parameter)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    for name, value in arguments.items():
        sub = props.get(name) if isinstance(props.get(name), Mapping) else {}
        yield from _leaves(name, value, sub)


def _leaves(name: str, value: Any, schema: Mapping[str, Any]) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, Mapping):
        yield from written_values(value, schema)
    elif isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
        for item in value:
            yield from _leaves(name, item, items)
    elif isinstance(value, (str, int, float)):
        yield name, value, schema


def _unstated_sql(tool: Tool, arguments: Mapping[str, Any], request: str) -> str | None:
    """A statement of a tool that runs INSERT / UPDATE / DELETE writing a value the request does not state."""
    if not runs_sql(tool.description, tool.input_schema, "write"):
        return None
    props = tool.input_schema.get("properties") or {}
    for name, value in arguments.items():
        sub = props.get(name) if isinstance(props.get(name), Mapping) else {}
        if not isinstance(value, str) or not is_sql_parameter(name, sub):
            continue
        for literal in unstated_literals(value, request)[:1]:
            return f"{tool.name} writes data and the request does not state the value {literal!r} its statement holds"
    return None


def unstated_change(tool: Tool, arguments: Mapping[str, Any] | None, request: str) -> str | None:
    """Why this call must not run (None: it may): the tool may destroy data and a value it writes is not stated."""
    if not arguments:
        return None
    if not tool.destructive:
        return _unstated_sql(tool, arguments, request)
    if request_replacement(request) and not takes_replacement(tool.input_schema):
        # "In notes.txt, replace 'Acme' with 'Initech'." had called write_file(notes.txt, "Initech"), overwriting the file
        return f"{tool.name} may destroy data (its server says so) and the request asks to replace text, which it cannot"
    paths = set(request_paths(request))
    for name, value, schema in written_values(arguments, tool.input_schema):
        if isinstance(value, str) and TEXT_PARAMETER.search(name) and value.strip() in paths:
            return f"{tool.name} may destroy data (its server says so) and would write the file name {value!r} as its {name}"
        if isinstance(value, str) and TEXT_PARAMETER.search(name) and _restates(value, request):
            return f"{tool.name} may destroy data (its server says so) and would write the request itself as its {name}"
        # a value that is itself a path ("backups/notes.txt" for a destination) is read as one, pieces of the
        # request's paths included
        as_path = isinstance(value, str) and request_paths(value) == [value.strip()]
        if not stated("path" if as_path else name, value, request, schema) or (isinstance(value, str) and not _mostly_said(value, request)):
            return f"{tool.name} may destroy data (its server says so) and the request does not state its {name} {value!r}"
        if isinstance(value, str) and (TEXT_PARAMETER.search(name) or holds_names(name)) and _spliced(value, request):
            # a name is copied whole too: "Delete the note with id 2." had deleted the graph entity "note 2"
            return (f"{tool.name} may destroy data (its server says so) and its {name} {value!r} puts together words the "
                    "request does not write together")
    return None


def _restates(value: str, request: str) -> bool:
    """The value is the request over again (four fifths of its words of three letters or more, three at least:
    `stated.words_said`): "Stage the file notes.txt." had called `write_file(path: "notes.txt", content: "Stage the
    file notes.txt")` and overwritten the file.

    >>> _restates("Stage the file notes.txt", "Stage the file notes.txt."), _restates("buy milk", "Write 'buy milk' to a.txt")
    (True, False)
    """
    said, own = words_said(request, value)  # the request's words the value uses
    return own >= 3 and 5 * said >= 4 * own


def _spliced(value: str, request: str) -> bool:
    """A text of two words or more that the request does not write as one run (`words.words`: case and punctuation
    aside): what a file should say is copied whole, so pieces put together are the model's own. "In notes.txt,
    replace the word milk with bread." had called `write_file(path: "notes.txt", content: "milk bread")` and
    overwritten the file.

    >>> _spliced("milk bread", "In notes.txt, replace the word milk with bread."), _spliced("Water the plants!", "Create todo.txt containing 'water the plants'")
    (True, False)
    """
    own, said = words(value), words(request)
    if len(own) < 2:
        return False
    return not any(said[i:i + len(own)] == own for i in range(len(said) - len(own) + 1))


def _mostly_said(value: str, request: str) -> bool:
    """Two thirds of the value's words of three letters or more are the request's (`stated.words_said`)."""
    said, own = words_said(value, request)
    return 3 * said >= 2 * own
