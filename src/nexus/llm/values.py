"""Argument values after decoding: normalised to what the schema asks for, and optional ones kept only when the
request states them.

A small model copies "Tokyo" where the schema wants an IANA zone, "5:30pm" where it wants `HH:MM`, and fills
optional parameters nobody asked for with plausible values. Each rule here reads only the schema (type,
enum, format, a format written in the description) and the request, never a tool's name, so it holds for
registries it has never seen. Pure standard library (`zoneinfo` for the zone names); the caller validates
the result against the full JSON Schema afterwards.

The rules that read one value live beside this module: `formats` (zones, dates, times, expressions), `stated` (what
a request states), `parameters` (what a schema has room for), `choices`, `sql` and `words` (quotes, cut-off words);
here is the pass over one call's arguments.

>>> schema = {"type": "object", "properties": {"tz": {"type": "string", "description": "IANA time zone"},
...           "limit": {"type": "integer"}}, "required": ["tz"]}
>>> normalise_arguments({"tz": "tokyo", "limit": 5}, schema, "What time is it in Tokyo?")
{'tz': 'Asia/Tokyo'}
"""

from __future__ import annotations

import json
import re
from typing import Any, Collection, Mapping

from nexus.gate.evidence import is_expression_parameter, is_sql_parameter
from nexus.llm.formats import is_zone_parameter, to_expression, to_hh_mm, to_iso_date, to_zone, value_format, whole_expression
from nexus.llm.inserts import stated_insert
from nexus.llm.layouts import date_layout, to_layout
from nexus.llm.parameters import MOVE_ENDS, flag_in_request
from nexus.llm.sql import known_tables, stated_filter, stated_limit, stated_statement, unique_columns
from nexus.llm.stated import HERE_WORDS, NAMED_FOLDER, YEAR, request_full_dates, stated
from nexus.llm.words import trimmed, whole_quote, whole_word, words


# -- the pass over one call's arguments ---------------------------------------------------------------
def normalise_value(name: str, schema: Mapping[str, Any], value: Any, request: str = "",
                    tables: Collection[str] = ()) -> Any:
    """One value in the form its schema asks for (zone, date, time, enum spelling, a SQL statement's tables as the
    server's database names them, `tables`); unchanged otherwise. A date without a year takes the year the request
    gives the same date ("April 15th ... April 22nd 2023"), else this year's.

    >>> normalise_value("day", {"type": "string", "format": "date"}, "April 15th", "April 15th to April 22nd 2023")
    '2023-04-15'
    """
    if not isinstance(value, str):
        return value
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        folded = {str(option).lower(): option for option in schema["enum"]}
        return folded.get(value.strip().lower(), value)
    if is_zone_parameter(name, schema):
        return to_zone(value) or value
    if is_expression_parameter(name, schema):
        return whole_expression(to_expression(value), request)
    if is_sql_parameter(name, schema):
        statement = known_tables(stated_filter(stated_statement(value, request), request), tables)
        return unique_columns(stated_insert(stated_limit(statement, request), request))
    fmt = value_format(schema)
    if fmt == "date":
        iso = to_iso_date(value)
        if iso and not YEAR.search(value):
            iso = next((d for d in request_full_dates(request) if d[5:] == iso[5:]), iso)
        return iso or value
    if fmt == "time":
        return to_hh_mm(value) or value
    return unique_columns(value)



def _said(value: Any) -> str | None:
    """A number or string value as the request would write it ("1234" for 1234 and "1234"); None for others."""
    if isinstance(value, list) and value:  # a list copied into two parameters ("years" filled with the cash flows)
        return json.dumps([_said(v) for v in value])
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return str(int(value)) if isinstance(value, float) and value == int(value) else str(value)


def _repeats(value: Any, given: set[str], request: str) -> bool:
    """Whether an optional value repeats a required one's (`given`, as `_said` writes them) that the request states
    only once: a list always, a number or string unless the request writes it twice."""
    said = _said(value)
    if said is None or said not in given:
        return False
    twice = len(re.findall(rf"(?<![\w.]){re.escape(said)}(?![\w]|\.\d)", request or "")) > 1
    return not (isinstance(value, str | int | float) and twice)


def _one_owner(arguments: dict[str, Any], required: set[str], request: str) -> dict[str, Any]:
    """Of optional parameters that hold the same string, which the request writes once, the one whose name the request
    writes right before it keeps it, when exactly one is: "songs from the album 'Halcyon'" had also filled `artist` with
    "Halcyon".

    >>> _one_owner({"album": "Halcyon", "artist": "Halcyon", "year": "2012"}, set(), "songs from the album 'Halcyon' of 2012")
    {'album': 'Halcyon', 'year': '2012'}
    >>> _one_owner({"start": "Paris", "end": "Paris"}, set(), "a round trip from Paris")  # named beside neither: kept
    {'start': 'Paris', 'end': 'Paris'}
    """
    groups: dict[str, list[str]] = {}
    for name, value in arguments.items():
        if name not in required and isinstance(value, str) and value.strip():
            groups.setdefault(value.strip().lower(), []).append(name)
    drop: set[str] = set()
    for value, names in groups.items():
        found = list(re.finditer(rf"(?<![\w]){re.escape(value)}(?![\w])", request or "", re.I))
        if len(names) < 2 or len(found) != 1:
            continue
        before = set(words(request[max(0, found[0].start() - 24):found[0].start()]))
        owners = [n for n in names if any(len(w) >= 3 and any(b.startswith(w[:5]) for b in before) for w in words(n))]
        if len(owners) == 1:
            drop |= set(names) - set(owners)
    return {n: v for n, v in arguments.items() if n not in drop}


def _inside_given(value: Any, given: set[str], request: str) -> bool:
    """Whether an optional string the request writes only as a piece of a longer word that a required value holds:
    "Create a new branch called feature-x." had filled base_branch with "x" beside branch_name "feature-x" (the
    server refused the call: no such branch). A whole word inside a longer value ("CA" of "Berkeley, CA") is not a
    piece.

    >>> _inside_given("x", {"feature-x"}, "Create a branch called feature-x."), _inside_given("CA", {"Berkeley, CA"}, "in Berkeley, CA")
    (True, False)
    >>> _inside_given("main", {"fix-1"}, "Branch fix-1 off main")
    False
    """
    if not isinstance(value, str) or not value.strip() or not given:
        return False
    found = list(re.finditer(rf"(?<![^\W_]){re.escape(value)}(?![^\W_])", request or "", re.I))
    words = [w for g in given for w in re.findall(r"\S+", g)]
    pieces = []
    for match in found:
        start, end = match.start(), match.end()
        while start > 0 and not request[start - 1].isspace():
            start -= 1
        while end < len(request) and not request[end].isspace():
            end += 1
        word = request[start:end].strip(".,;:!?()[]\"'`")
        pieces.append(word.lower() != value.lower() and any(word.lower() == w.strip(".,;:!?()[]\"'`").lower() for w in words))
    return bool(pieces) and all(pieces)


def _stated_notes(value: Any, schema: Mapping[str, Any], request: str) -> Any:
    """A list of objects whose free-text lists hold only what the request states: the model fills a required list of
    notes the request gives none of with something of its own ("observations": ["1000000…"] for "Add an entity named
    Tokyo of type city"), which the tool would store. A list that must keep items (minItems) is left alone.

    >>> schema = {"type": "array", "items": {"type": "object", "properties": {"observations": {"type": "array",
    ...           "items": {"type": "string"}}}}}
    >>> _stated_notes([{"name": "Tokyo", "observations": ["city: Tokyo", "1000000"]}], schema, "Add Tokyo, a city")
    [{'name': 'Tokyo', 'observations': ['city: Tokyo']}]
    """
    items = schema.get("items") if isinstance(schema, Mapping) else None
    if not isinstance(value, list) or not isinstance(items, Mapping) or not isinstance(items.get("properties"), Mapping):
        return value
    notes = {n for n, sub in items["properties"].items() if isinstance(sub, Mapping) and sub.get("type") == "array"
             and isinstance(sub.get("items"), Mapping) and sub["items"].get("type") == "string"
             and "enum" not in sub["items"] and not sub.get("minItems")}

    def kept(key: str, field_value: Any) -> Any:
        if key not in notes or not isinstance(field_value, list):
            return field_value
        return [x for x in field_value if not isinstance(x, str) or stated(key, x, request)]

    return [{k: kept(k, v) for k, v in entry.items()} if isinstance(entry, dict) else entry for entry in value]


def names_the_tool(value: Any, tool_name: str, request: str) -> bool:
    """Whether a value is the called tool's own name, which the request does not write: the model copying the name it
    just wrote (`git_create_branch(branch_name="feature-login", base_branch="git_create_branch")`, which the server
    refused). Its words may all be the request's ("create", "branch"), so `stated` alone lets it through.

    >>> names_the_tool("git_create_branch", "git_create_branch", "Create a new branch named feature-login.")
    True
    >>> names_the_tool("git_create_branch", "git_create_branch", "Explain what git_create_branch does")
    False
    """
    if not tool_name or not isinstance(value, str):
        return False
    return value.strip().lower() == tool_name.lower() and tool_name.lower() not in (request or "").lower()


_EXCLUDES = re.compile(r"exclu|ignor|skip|except|omit|blacklist|blocklist|deny", re.I)
_LEAVES_OUT = re.compile(r"\b(exclud\w*|except\w*|without|ignor\w*|skip\w*|omit\w*|not|no|but|other\s+than|apart\s+from|"
                         r"leave\s+out|leaving\s+out|n't)\b|n't\b", re.I)


def unasked_exclusion(name: str, request: str) -> bool:
    """An optional parameter that leaves things out ("excludePatterns", "ignore_case" aside) when the request asks to
    leave nothing out: "Find every .txt file in the workspace." had searched with `excludePatterns: ["*.txt"]` and
    found nothing.

    >>> unasked_exclusion("excludePatterns", "Find every .txt file in the workspace.")
    True
    >>> unasked_exclusion("excludePatterns", "Find .txt files but not the ones in backups"), unasked_exclusion("pattern", "Find x")
    (False, False)
    """
    return bool(_EXCLUDES.search(name)) and not re.search(r"case", name, re.I) and not _LEAVES_OUT.search(request or "")


_GLOB = re.compile(r"\bglob", re.I)
_WILDCARD = re.compile(r"[*?\[{]")


def widened_globs(arguments: Mapping[str, Any], schema: Mapping[str, Any], description: str = "",
                  request: str = "") -> dict[str, Any]:
    """A search pattern with no wildcard, for a tool whose text says its patterns are globs, matches the names that
    hold it anywhere below ("txt" -> "**/*txt*"; a kind of file named in words, its extension: "markdown" ->
    "**/*.md"; an extension, written with its dot by the model or in the `request`, ends the name: ".md" ->
    "**/*.md"): a glob without one matches only a path spelled exactly so, and
    "Find every .txt file in the workspace." had searched for the pattern "txt" and found nothing. Exclusions
    (`unasked_exclusion`'s names) are left as written.

    >>> widened_globs({"path": ".", "pattern": "txt"}, {"properties": {"pattern": {"type": "string"}}}, "glob-style patterns")
    {'path': '.', 'pattern': '**/*txt*'}
    >>> widened_globs({"pattern": "*.txt"}, {}, "glob-style patterns"), widened_globs({"pattern": "txt"}, {}, "a regex")
    ({'pattern': '*.txt'}, {'pattern': 'txt'})
    >>> widened_globs({"pattern": "Markdown"}, {}, "glob patterns")  # a kind of file by its name: its extension
    {'pattern': '**/*.md'}
    >>> widened_globs({"pattern": "md"}, {}, "glob patterns", "Find every file ending in .md.")
    {'pattern': '**/*.md'}
    """
    props = schema.get("properties") or {}
    out = dict(arguments)
    for name, value in arguments.items():
        sub = props.get(name) if isinstance(props.get(name), Mapping) else {}
        said = f"{description} {sub.get('description', '')}"
        if (isinstance(value, str) and value.strip() and "pattern" in name.lower() and not _EXCLUDES.search(name)
                and _GLOB.search(said) and not _WILDCARD.search(value)):
            kind = FILE_KINDS.get(value.strip().lower().removesuffix(" files").removesuffix(" file")) or _extension(value, request)
            out[name] = f"**/*.{kind}" if kind else f"**/*{value.strip()}*"
    return out


_EXTENSION = re.compile(r"[A-Za-z0-9]{1,5}")


def _extension(value: str, request: str) -> str | None:
    """`value` as a file extension, when it is one written with its dot (".md") or the request writes it so."""
    bare = value.strip().removeprefix(".")
    if not _EXTENSION.fullmatch(bare):
        return None
    written = value.strip().startswith(".") or re.search(rf"(?<![\w.])\.{re.escape(bare)}(?!\w|\.\w)", request, re.I)
    return bare if written else None

# kinds of file users name in words, and the extension their files carry
FILE_KINDS = {"markdown": "md", "python": "py", "text": "txt", "javascript": "js", "typescript": "ts", "shell": "sh",
              "json": "json", "csv": "csv", "yaml": "yaml", "html": "html", "pdf": "pdf", "log": "log", "sql": "sql"}


def moved_into_folder(arguments: Mapping[str, Any], request: str) -> dict[str, Any]:
    """A move whose destination is its own source, when the request names the folder it goes into, goes into that
    folder under its own name: "Move notes.txt into the archive folder." had called `move_file(source: "notes.txt",
    destination: "notes.txt")`, which the server refused. Any other destination is left as written.

    >>> moved_into_folder({"source": "notes.txt", "destination": "notes.txt"}, "Move notes.txt into the archive folder.")
    {'source': 'notes.txt', 'destination': 'archive/notes.txt'}
    >>> moved_into_folder({"source": "a.txt", "destination": "b.txt"}, "Rename a.txt to b.txt in the docs folder")
    {'source': 'a.txt', 'destination': 'b.txt'}
    >>> moved_into_folder({"source": "final.txt", "destination": "final.txt"}, "Rename draft.txt to final.txt.")
    {'source': 'draft.txt', 'destination': 'final.txt'}
    """
    from nexus.llm.directions import _placed, direction
    from nexus.paths import written_paths

    ends = {direction(n): n for n in arguments if MOVE_ENDS.match(n)}
    source, target = arguments.get(ends.get("source", "")), arguments.get(ends.get("target", ""))
    if not isinstance(source, str) or source != target:
        return dict(arguments)
    # the request writes both ends and places one with its cue ("Rename notes.txt to notes-old.txt." had called
    # `move_file(source: "notes-old.txt", destination: "notes-old.txt")`; held-out set 56): each end its own path
    paths = list(dict.fromkeys(written_paths(request)))
    if len(paths) == 2 and source in paths:
        _, placed = _placed(paths, request, written_paths)
        if placed is not None:
            return {**arguments, ends["source"]: next(p for p in paths if p != placed), ends["target"]: placed}
    for cue in re.finditer(r"\b(?:into|to|in)\s+", request or "", re.I):  # the folder named after the cue
        named = NAMED_FOLDER.match(request, cue.end())
        folder = named and (named.group(1) or named.group(2))
        if folder and folder.lower() not in HERE_WORDS:
            return {**arguments, ends["target"]: f"{folder}/{source.rstrip('/').rsplit('/', 1)[-1]}"}
    return dict(arguments)


def normalise_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str,
                        drop_unstated: bool = True, tool_name: str = "", description: str = "",
                        tables: Collection[str] = ()) -> dict[str, Any]:
    """Top-level arguments normalised (`normalise_value`); with `drop_unstated`, optional ones the request does
    not state (`stated`), that only repeat `tool_name` (`names_the_tool`) or that leave out what the request does
    not (`unasked_exclusion`), are left out, so the tool's own defaults apply. Then the tools' conventions: glob
    patterns widened where the tool's `description` says globs (`widened_globs`), a move onto itself sent into the
    folder the request names (`moved_into_folder`)."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out = {}
    for name, value in arguments.items():
        sub = props.get(name) if isinstance(props.get(name), Mapping) else {}
        value = normalise_value(name, sub, value, request, tables)
        layout = date_layout(sub) if isinstance(value, str) else None
        if layout:  # a date in the layout the description spells out ("MM/DD/YYYY")
            value = to_layout(value, layout, request)
        elif isinstance(value, str) and "enum" not in sub and value_format(sub) is None:
            value = whole_word(whole_quote(trimmed(value, request), request), request)
        if drop_unstated and name not in required and (not stated(name, value, request, sub)
                                                        or names_the_tool(value, tool_name, request)
                                                        or unasked_exclusion(name, request)):
            continue
        out[name] = _stated_notes(value, sub, request) if drop_unstated else value
    if drop_unstated:  # a value the request states once belongs to one parameter: the required one keeps it
        given = {_said(v) for n, v in out.items() if n in required} - {None}
        out = {n: v for n, v in out.items() if n in required or not (_repeats(v, given, request)
                                                                     or _inside_given(v, given, request))}
    if drop_unstated:  # and of two optional ones that hold it, the one the request names beside it
        out = _one_owner(out, required, request)
    if drop_unstated:  # a flag the request names is set from the request, also when the model left it out
        for name, sub in props.items():
            flag = flag_in_request(name, sub, request) if isinstance(sub, Mapping) else None
            if flag is not None:
                out[name] = flag
    return moved_into_folder(widened_globs(out, schema, description, request), request)
