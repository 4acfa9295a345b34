"""GBNF grammars that constrain decoding: a tool's arguments (from its JSON Schema) and a choice of names.

Arguments follow `Arguments:` in the prompt, so the grammar starts with one space, then the JSON object
llama.cpp's own JSON-Schema converter describes (required keys first, optional keys in schema order,
no keys the schema does not define).

>>> print(arguments_gbnf({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}).splitlines()[-1])
root ::= " " arguments
>>> choice_gbnf(["a", 'b"c'])
'root ::= " a" | " b\\\\"c"'
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from functools import lru_cache
from typing import Any, Mapping, Sequence

from nexus.gate.evidence import (IN_TABLE, LISTS_FOLDERS, WRITE_VERBS, is_expression_parameter, is_path_list_parameter,
                                 is_sql_parameter, named_table, rows_table, sole_expression, sql_in_words, stated_path_list)
from nexus.llm.names import fact_subject, holds_names, name_fields, request_names
from nexus.slb.lexical import STOPWORDS

log = logging.getLogger(__name__)
_ROOT_REF = re.compile(r"(?<![\w-])root(?![\w-])")
FILES_TOOL = re.compile(r"\b(?:files?|folders?|director(?:y|ies)|paths?)\b", re.I)  # a tool description about files


def _gbnf_literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def normalise_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy the converter handles as the tool means it: a parameterless object is exactly `{}`."""
    out = copy.deepcopy(dict(schema))
    out.setdefault("type", "object")
    if out.get("type") == "object" and "properties" not in out and not out.get("additionalProperties"):
        out["properties"] = {}
    required = out.get("required")
    if isinstance(required, list):  # the converter fails on required keys that are not properties
        out["required"] = [name for name in required if name in (out.get("properties") or {})]
    return out


MAX_ARRANGED = 3  # a list of up to this many stated paths is offered as its arrangements (15 for three)


def _each_once(sub: dict[str, Any], values: Sequence[str], least: int = 1) -> None:
    """A list parameter that takes the `values` the request writes, each at most once and at least `least` of them: up
    to MAX_ARRANGED of them as their arrangements ("Read notes.txt and repo/notes.md … together." had read
    ["repo/notes.md", "repo/notes.md"], held-out set 67), more as a choice per item."""
    sub["items"]["enum"] = list(values)
    if least > 1:
        sub["minItems"] = max(int(sub.get("minItems", 0)), least)
    if len(values) <= MAX_ARRANGED:
        sub["enum"] = [a for a in _arrangements(values) if len(a) >= least]


def _arrangements(items: Sequence[str]) -> list[list[str]]:
    """Every non-empty list of distinct `items`, in any order: a list that names each item at most once.

    >>> _arrangements(["a", "b"])
    [['a'], ['b'], ['a', 'b'], ['b', 'a']]
    """
    from itertools import permutations

    return [list(p) for n in range(1, len(items) + 1) for p in permutations(items, n)]


@lru_cache(maxsize=4096)
def _arguments_gbnf(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        body = json_schema_to_gbnf(schema_json)
    except Exception as exc:  # noqa: BLE001 - the converter raises bare exceptions on odd schemas
        # Still JSON, just not schema-shaped: jsonschema validation and the repair step catch the rest.
        log.warning("no exact grammar for this schema (%s); constraining to any JSON object", exc)
        body = json_schema_to_gbnf(json.dumps({"type": "object"}))
    lines = []
    for line in body.splitlines():
        name, sep, rule = line.partition(" ::= ")
        name = "arguments" if name == "root" else name
        lines.append(f"{name}{sep}{_ROOT_REF.sub('arguments', rule)}")
    lines.append('root ::= " " arguments')
    return "\n".join(sorted(lines[:-1]) + lines[-1:]) + "\n"


CITY_STATE = re.compile(r"'?city, state'?", re.I)
CITY_STATE_PATTERN = "^[A-Z][A-Za-z .'-]*, [A-Z]{2}$"
# "CREATE TABLE SQL statement", "SELECT SQL query to execute", "INSERT, UPDATE, or DELETE SQL query" (mcp-server-sqlite):
# a description that opens with statement keywords in capitals before "SQL" names the only statements its server runs
_SQL_KEYWORD = r"(?:CREATE TABLE|CREATE|SELECT|INSERT|UPDATE|DELETE|DROP|ALTER|WITH|PRAGMA)"
SQL_KINDS = re.compile(rf"^\s*({_SQL_KEYWORD}(?:\s*,\s*(?:or\s+)?{_SQL_KEYWORD}|\s+or\s+{_SQL_KEYWORD})*)\s+SQL\b")


# the statements a tool's description names in capitals ("Execute a SELECT query"); CREATE alone names no statement
_TOOL_SQL_KEYWORD = r"(?:SELECT|INSERT|UPDATE|DELETE|CREATE TABLE|DROP TABLE|ALTER TABLE)"
_IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]*"
_TYPES = "(TEXT|INTEGER|REAL)"
# words of a create-table request that name no table or column: the lexical channel's stop words and the request's verbs
_SQL_FILLER = STOPWORDS | frozenset("without into called named new table tables column columns create make add".split())


def sql_pattern(description: str, request: str = "", tool_description: str = "",
                tables: Mapping[str, Mapping[str, str]] = {}) -> str | None:
    """The pattern of a SQL parameter whose description names the statements it takes (None otherwise): the model
    wrote "books" for "CREATE TABLE SQL statement", which the server refuses ("Only CREATE TABLE statements are
    allowed"). Other statements stay free after their keyword (no quote or backslash: the grammar's JSON string). A
    CREATE TABLE is a table of typed columns, its table and column names among the request's words (no more columns
    than those words, less the table's): free after the keyword, the model looped ("title:str, author:str, ISBN:str, ISBN_number…").

    >>> print(sql_pattern("INSERT, UPDATE, or DELETE SQL query"))
    ^(INSERT|UPDATE|DELETE) [^"\\\\]*$
    >>> print(sql_pattern("CREATE TABLE SQL statement", "Make a table called pets with columns name and age"))
    ^CREATE TABLE (pets|name|age) \\((pets|name|age) (TEXT|INTEGER|REAL)(, (pets|name|age) (TEXT|INTEGER|REAL)){0,1}\\)$
    >>> sql_pattern("The SQL query to run"), sql_pattern("Select the SQL dialect")
    (None, None)

    A parameter that says only "SQL query" takes the statements its tool's description names in capitals (the
    server's `write_query`, "Execute an INSERT, UPDATE, or DELETE query": free, the model wrote "Dune" for "Insert a
    book called 'Dune' … into the books table").

    >>> print(sql_pattern("SQL query to execute", "", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database"))
    ^(INSERT|UPDATE|DELETE) [^"\\\\]*$
    >>> print(sql_pattern("SQL query to execute", "Insert a book called 'Dune' into the books table.", "Run an INSERT or DELETE"))
    ^INSERT INTO (books) \\(([A-Za-z][A-Za-z0-9_]{0,30})\\) VALUES \\(('Dune')\\)$
    """
    match = SQL_KINDS.match(description)
    if match:
        kinds = re.findall(_SQL_KEYWORD, match.group(1))
    else:
        kinds = list(dict.fromkeys(re.findall(rf"\b{_TOOL_SQL_KEYWORD}\b", tool_description or "")))
        if not kinds:
            return None
    # a request that opens with the verb of one of them asks for that one ("Insert a book …": INSERT INTO, not DELETE),
    # also after the table it is about ("In the notes table, add a note …", held-out set 77)
    verb = re.match(rf"\W*(?:{IN_TABLE})?(?:please\s+)?(\w+)", request or "", re.I)
    asked = WRITE_VERBS.get(verb.group(1).lower()) if verb else None
    if asked and asked.split()[0] in kinds:
        return _with_columns(_row_statement(asked, request, tables), tables) or "^" + asked + ' [^"\\\\]*$'
    read = _read_statement(request, tables) if "SELECT" in kinds else None
    if read:
        return _with_columns(read, tables)
    if kinds != ["CREATE TABLE"]:
        return "^(" + "|".join(kinds) + ') [^"\\\\]*$'
    names = [w for w in dict.fromkeys(re.findall(_IDENTIFIER, request)) if w.lower() not in _SQL_FILLER]
    name = _one_of(names) if names else _IDENTIFIER
    column = f"{name} {_TYPES}"
    return f"^CREATE TABLE {name} \\({column}(, {column}){{0,{max(len(names) - 2, 0) if names else 15}}}\\)$"


def _with_columns(pattern: str | None, tables: Mapping[str, Mapping[str, str]]) -> str | None:
    r"""A row statement's pattern with its free column names (`_COLUMN`) narrowed to the columns of its table, where the
    server said what they are (`Tool.tables`), and for a quoted text (a value compared with `=` or `LIKE`, or a row of
    texts inserted) to its text columns (declared TEXT, CHAR or CLOB, or with no type): offered `id` too, the model
    had written `WHERE id = 'Buy milk'`, which matches no row. Unchanged otherwise.

    >>> notes = {"notes": {"id": "INTEGER", "title": "TEXT", "body": "TEXT"}}
    >>> print(_with_columns(f"^DELETE FROM (notes) WHERE {_COLUMN} = ('x')$", notes))
    ^DELETE FROM (notes) WHERE (title|body) = ('x')$
    >>> print(_with_columns(f"^DELETE FROM (notes) WHERE {_COLUMN} = (2)$", notes))
    ^DELETE FROM (notes) WHERE (id|title|body) = (2)$
    >>> print(_with_columns(f"^INSERT INTO (notes) \\({_COLUMN}\\) VALUES \\(('x')\\)$", notes))
    ^INSERT INTO (notes) \((title|body)\) VALUES \(('x')\)$
    >>> _with_columns(f"^DELETE FROM (notes) WHERE {_COLUMN} = ('x')$", {"notes": {}}) == f"^DELETE FROM (notes) WHERE {_COLUMN} = ('x')$"
    True
    """
    if not pattern:
        return pattern
    named = [t for t, columns in tables.items() if columns and re.search(rf"(?:FROM|INTO|UPDATE) \(?{re.escape(t)}\b", pattern)]
    if len(named) != 1:
        return pattern
    columns = list(tables[named[0]])
    texts = [c for c, kind in tables[named[0]].items() if not kind or re.search(r"TEXT|CHAR|CLOB", kind)] or columns
    inserted = re.search(r"VALUES \\\((.*)\\\)\$$", pattern)  # an INSERT's values: texts only, or not
    inserts_texts = inserted is not None and "'" in inserted.group(1) and not re.search(r"\(\d", inserted.group(1))
    out, at = [], 0
    for found in re.finditer(re.escape(_COLUMN), pattern):
        after = pattern[found.end():]
        compared = after.startswith((" = (", " LIKE "))  # a WHERE or SET column: the value right after it tells
        text = after.startswith((" = ('", " LIKE '")) if compared else inserts_texts
        out += [pattern[at:found.start()], _one_of(texts if text else columns)]
        at = found.end()
    return "".join(out) + pattern[at:]


_ROW_FILLER = _SQL_FILLER | frozenset(WRITE_VERBS) | frozenset("row rows entry entries record records".split())
_COLUMN = "([A-Za-z][A-Za-z0-9_]{0,30})"
_BEFORE_VALUE = r"\b([A-Za-z_]\w*)\s+(?:=\s*|is\s+)?"  # the word a request writes before a value ("title 'X'", "id is 2")
_ROW_LITERAL = re.compile(r"[\w ]+")  # a value the pattern can hold as it is (no quote, bracket or dot to escape)


def _row_values(request: str) -> tuple[str, list[str]] | None:
    """The request with its quoted spans blanked out, and the values a row statement may hold: each quoted span (in
    single quotes) and each number, once; None when a quoted value holds what the pattern cannot hold as it is.

    >>> _row_values("Add 'Buy milk' as note 2, then note 2 again")
    ('Add   as note 2, then note 2 again', ["'Buy milk'", '2'])
    """
    from nexus.llm.words import quoted_spans

    quoted = quoted_spans(request)
    if any(not _ROW_LITERAL.fullmatch(q) for q in quoted):
        return None
    bare = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", " ", request)
    return bare, list(dict.fromkeys([f"'{q}'" for q in quoted] + re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)", bare)))


def _row_statement(asked: str, request: str, tables: Mapping[str, Mapping[str, str]] = {}) -> str | None:
    r"""An INSERT, UPDATE or DELETE asked for in words, as a pattern built from the request: the table it names, else
    its words or their plurals ("the note with id 2" is in table notes); a column the word written before a value, else
    any short name; the values among what it quotes and its numbers, as many values as columns; an UPDATE and a DELETE
    always with a WHERE. None when the request states no value or quotes one the pattern cannot hold as it is; the free
    pattern is then used. Free, the model wrote "INSERT INTO DUNE" and "DELETE FROM BOOK:DUNE" for "… a book called
    'Dune' … the books table" and looped on "Insert a row with title 'Buy milk' into the notes table.".

    >>> print(_row_statement("DELETE FROM", "Delete note 2."))
    ^DELETE FROM (notes) WHERE id = (2)$
    >>> print(_row_statement("DELETE FROM", "Delete note 2 from the notes table."))
    ^DELETE FROM (notes) WHERE id = (2)$
    >>> print(_row_statement("INSERT INTO", "Insert a row with title 'Buy milk' into the notes table."))
    ^INSERT INTO (notes) \((title)\) VALUES \(('Buy milk')\)$
    >>> print(_row_statement("INSERT INTO", "Insert a note titled 'Call mom' with body 'Sunday evening' into notes."))
    ^INSERT INTO (notes) \((title), (body)\) VALUES \(('Call mom'), ('Sunday evening')\)$
    >>> print(_row_statement("UPDATE", "In the notes table, set the title of note 2 to 'Groceries'."))
    ^UPDATE (notes) SET (title) = ('Groceries') WHERE id = (2)$
    >>> print(_row_statement("DELETE FROM", "Delete the note with id 2."))
    ^DELETE FROM (notes) WHERE (id) = (2)$
    >>> print(_row_statement("DELETE FROM", "Delete everything from the notes table."))
    ^DELETE FROM (notes)$
    >>> _row_statement("DELETE FROM", "Delete everything."), _row_statement("SELECT", "Show note 3")
    (None, None)
    """
    if asked not in ("INSERT INTO", "DELETE FROM", "UPDATE"):
        return None
    stated = _row_values(request)
    if stated is None:
        return None
    bare, values = stated
    # a word written after "with", "whose" or "where" and before a value is a column, not the table ("the note with id
    # 2": the model had written `DELETE FROM ids`)
    columns = {w.lower() for w in re.findall(rf"\b(?:with|whose|where)\s+(?:the\s+|an?\s+)?{_BEFORE_VALUE}(?:'[^']*'|\d)",
                                             request, re.I)}
    words = [w for w in dict.fromkeys(re.findall(_IDENTIFIER, bare)) if w.lower() not in _ROW_FILLER | columns]
    named = named_table(bare, tables)
    if named and named.lower() not in _ROW_FILLER:  # "the notes table" names it
        words = [named]
    # a table the request does not name is one of its words in the plural, as tables mostly are ("the note with id 2"
    # is a row of notes; offered "note" too, the model wrote `DELETE FROM note`)
    names = list(dict.fromkeys(w if named or w.endswith("s") else w + "s" for w in words))
    if not values and named and asked == "DELETE FROM" and re.search(r"\b(?:all|every|everything)\b", bare, re.I):
        return f"^DELETE FROM {_one_of([named])}$"  # "Remove all notes from the notes table." (free: `WHERE name = `)
    if not values or not names:
        return None
    name, value = _one_of(names), _one_of(values)
    # a column is the word the request writes before a value ("with title 'Buy milk'", "id 2"), else any short name (it
    # is often a word the request does not say: "a book called 'Dune'" is a title)
    kinds = {n[:-1] if n.endswith("s") else n for n in names}  # what a row of the table is ("note" of notes)
    pairs = [(w, v) for w, v in re.findall(rf"{_BEFORE_VALUE}('[^']*'|\d+(?:\.\d+)?(?!\w))", request)
             if w.lower() not in _ROW_FILLER | STOPWORDS | {"called", "named"} and w not in names
             and w not in kinds]  # "note 2": its id, also in the notes table
    before = [w for w, _ in pairs]
    # "note 2" of the notes table is the row with id 2 (the model had written the columns "note" and "note_id")
    kind = "|".join(map(re.escape, sorted(kinds)))
    by_id = "id" if re.search(rf"\b(?:{kind})s?\s+(?:#\s*|no\.?\s*|number\s+)?\d+(?!\w|\.\d)", bare, re.I) else _COLUMN
    column = _one_of([c for w in before for c in _column_names(w)]) if before else by_id
    if asked == "DELETE FROM":
        return f"^DELETE FROM {name} WHERE {column} = {value}$"
    if asked == "UPDATE":  # the column it sets and the one it finds the row by are seldom both written: any short name;
        # with text and a number stated, the text is what it sets and the number the row ("set note 2's title to 'X'")
        texts, numbers = [v for v in values if v.startswith("'")], [v for v in values if not v.startswith("'")]
        found = _found_by(request, texts, kinds) if len(texts) == 2 and not numbers else None
        if found:  # two texts, one of them the row's ("the note titled 'X'"): the other is what it sets
            (text, where), new = found, [t for t in texts if t != found[0]]
            row = _one_of([text])
        elif texts and numbers:  # the row by its number, under the column written before it ("with id 3") or by_id
            at = [c for w, v in pairs if v in numbers for c in _column_names(w)]
            new, row, where = texts, _one_of(numbers), _one_of(at) if at else by_id
        else:
            new, row, where = values, value, by_id
        sets = _set_column(request, [v for v in new if v.startswith("'")], kinds)
        tables = [n for n in names if not sets or n.lower() not in (sets.lower(), sets.lower() + "s")] or names
        head = f"^UPDATE {_one_of(tables)} SET {_one_of([sets]) if sets else _COLUMN} = {_one_of(new)}"
        if len(values) == 1 and texts and _EVERY_ROW.search(bare):  # "Change every note body … to 'archived'": every
            return head + "$"  # row (it had got `SET ARCHIVED = 'archived' WHERE BID = 'archived'`; refused)
        return head + f" WHERE {where} = {row}$"
    if asked == "INSERT INTO" and 1 < len(values) == len(pairs) == len({w.lower() for w, _ in pairs}) \
            and sorted(v for _, v in pairs) == sorted(values):
        # every value written after its own column ("titled 'Gym' with body 'leg day'"): that row, all of it (the model
        # had kept only the body: held-out set 57)
        columns = ", ".join(_one_of(_column_names(w)) for w, _ in pairs)
        return f"^INSERT INTO {name} \\({columns}\\) VALUES \\({', '.join(_one_of([v]) for _, v in pairs)}\\)$"
    rows = [f"\\({_times(column, n)}\\) VALUES \\({_times(value, n)}\\)" for n in range(1, min(len(values), 3) + 1)]
    return f"^INSERT INTO {name} " + (rows[0] if len(rows) == 1 else _one_of(rows)) + "$"


_EVERY_ROW = re.compile(r"\b(?:all|every|each)\b", re.I)


def _set_column(request: str, texts: Sequence[str], kinds: Sequence[str] = ()) -> str | None:
    """The column an UPDATE sets when the request names it ("the title of note 2", "its body", "has the title 'X'" for
    the quoted `texts` it may set, "every note body" for a row of `kinds`), else None for any short name (the model had
    written `SET name = 'Renew passport'` for "Set the title of note 2 to …").

    >>> _set_column("Set the title of note 2 to 'X'.", ["'X'"]), _set_column("Update note 1 so its body is 'y'.", ["'y'"])
    ('title', 'body')
    >>> _set_column("Update the note 'a' so it has content 'b'.", ["'b'"]), _set_column("Change 'a' to 'b'.", ["'b'"])
    ('content', None)
    >>> _set_column("Change every note body in the notes table to 'x'.", ["'x'"], ["note"])
    'body'
    """
    named = re.findall(r"\b(?:the|its|their)\s+([A-Za-z_]\w*)(?=\s+of\b)", request, re.I)
    named += re.findall(r"\b(?:its|their)\s+([A-Za-z_]\w*)", request, re.I)
    if kinds:  # "every note body", "each note's title"
        kind = "|".join(map(re.escape, sorted(kinds)))
        named += re.findall(rf"\b(?:all|every|each)\s+(?:the\s+)?(?:{kind})s?(?:'s)?\s+([A-Za-z_]\w*)", request, re.I)
    named += [w for v in texts for w in re.findall(_BEFORE_VALUE + re.escape(v), request)]
    named = [w for w in named if w.lower() not in _ROW_FILLER | STOPWORDS | {"says", "reads"} and _column_names(w) == [w]]
    return named[0] if named else None


def _found_by(request: str, texts: Sequence[str], kinds: set[str]) -> tuple[str, str] | None:
    """(value, the pattern of its column) for the one quoted value that finds the row: written after a participle
    ("the note titled 'Groceries'": title), after "called" or "named" or after what a row is ("the note 'Buy milk'":
    any short name); None unless exactly one is. With both texts in the SET and the WHERE, the model had written
    `SET name = 'Groceries' WHERE id = 'Groceries'` for "… so the note titled 'Groceries' has content 'eggs'." (set 61).

    >>> _found_by("Set the body of the note titled 'Buy milk' to 'two litres'.", ["'Buy milk'", "'two litres'"], {"note"})
    ("'Buy milk'", '(title)')
    >>> _found_by("Set the body of the note titled 'Buy milk' to 'two litres'.", ["'Buy milk'", "'two litres'"], {"titled"})
    ("'Buy milk'", '(title)')
    >>> _found_by("Change 'a' to 'b'.", ["'a'", "'b'"], {"note"}) is None
    True
    """
    found = []
    for text in texts:
        word = next(iter(re.findall(_BEFORE_VALUE + re.escape(text), request)), "")
        if word.lower() in ("called", "named"):
            found.append((text, _COLUMN))
        elif _column_names(word) != [word]:  # a participle: the noun it is made from (before `kinds`, which may hold it)
            found.append((text, _one_of(_column_names(word))))
        elif word.lower() in kinds:
            found.append((text, _COLUMN))
    return found[0] if len(found) == 1 else None


# words that ask for some rows, or rows in some order: a statement the request's table name alone cannot build
_FILTERED = re.compile(r"\b(where|whose|with|without|containing|contains?|about|mention\w*|that|which|sort\w*|order\w*|"
                       r"newest|oldest|latest|recent|first|last|top|most|least|alphabetical\w*|only|between|before|after)\b", re.I)


def _read_statement(request: str, tables: Mapping[str, Mapping[str, str]] = {}) -> str | None:
    r"""A read asked for in words about a named table that states no value and asks for no filter or order, as the one
    statement it can be: every row, or their count for "how many" (with one value in one column: `_read_where`). Free,
    the model wrote "SELECT * FROM notes WHERE name = 'notes'" for "How many rows are in the notes table?" (the server
    refused: no such column).

    >>> print(_read_statement("How many rows are in the notes table?"))
    ^SELECT COUNT\(\*\) FROM notes$
    >>> print(_read_statement("List every book in the books table."))
    ^SELECT \* FROM books$
    >>> _read_statement("Show 3 rows of the notes table") is None  # a value, but no column it is found by
    True
    >>> print(_read_statement("Show the notes in the notes table whose title is 'x'"))  # one value in one column
    ^SELECT \* FROM notes WHERE (title) = ('x')$
    >>> print(_read_statement("How many notes are in the database?"))  # no table named: the plural of what it counts
    ^SELECT COUNT\(\*\) FROM notes$
    """
    from nexus.llm.words import quoted_spans

    table = (named_table(request, tables) or rows_table(request)) if sql_in_words(request, tables) == "read" else None
    if not table or table.lower() in _ROW_FILLER:
        return None
    matching = _read_matching(request, table)
    if matching:
        return matching
    if quoted_spans(request) or re.search(r"\d", request):
        return _read_where(request, table)
    if _FILTERED.search(request.replace(f"{table} table", " ")):
        return None
    return _select(request, table)


def _select(request: str, table: str, clauses: str = "") -> str:
    """The pattern of a read of `table`'s rows, or of their count when the request asks how many, then `clauses`."""
    count = re.search(r"\bhow\s+many\b|\bcount\b|\bnumber\s+of\b", request, re.I)
    return "^SELECT " + (r"COUNT\(\*\)" if count else r"\*") + f" FROM {table}{clauses}$"


_VALUE = r"(?:'(?P<quoted>[^']+)'|\"(?P<double>[^\"]+)\"|(?P<word>(?-i:[A-Z])[\w-]*))"  # quoted, or a capitalised word
_OF_IT = r"(?:the\s+|its\s+|their\s+)?"
# a column's value that holds, starts or ends with a text, as a LIKE ("whose title contains 'milk'": the model had
# written `WHERE title = 'milk'`, and looped on "whose title starts with 'Shop'"); the column named, then the text, or
# the text, then "in" the column ("Which notes have 'Acme' in their body?")
_MATCHING = tuple((re.compile(pattern, re.I), like) for pattern, like in (
    (rf"\b(?:whose|where|with)\s+{_OF_IT}(?P<column>[A-Za-z_]\w*)\s+(?:contains?|mentions?|includes?|has)\s+{_VALUE}", "%{}%"),
    (rf"\b(?:whose|where|with)\s+{_OF_IT}(?P<column>[A-Za-z_]\w*)\s+(?:starts?|begins?)\s+with\s+{_VALUE}", "{}%"),
    (rf"\b(?:whose|where|with)\s+{_OF_IT}(?P<column>[A-Za-z_]\w*)\s+ends?\s+with\s+{_VALUE}", "%{}"),
    (r"\b(?:have|has|with|mentions?|mentioning|contains?|containing)\s+(?:'(?P<quoted>[^']+)'|\"(?P<double>[^\"]+)\"|"
     rf"(?P<bare>[\w-]+))\s+in\s+{_OF_IT}(?P<column>[A-Za-z_]\w*)", "%{}%"),
    # the text alone, no column ("Which of my notes mention 'Alice'?", held-out set 79 had looped): any column, those
    # the server said its table has where it did (`_with_columns`)
    (r"\b(?:mentions?|mentioning|contains?|containing)\s+(?:'(?P<quoted>[^']+)'|\"(?P<double>[^\"]+)\")"
     r"(?!\s+in\b)", "%{}%"),
))
_ORDERED = re.compile(rf"[,;]?\s*\b(?:sorted|ordered|order|sort)\s+(?:them\s+)?by\s+{_OF_IT}(?P<column>[A-Za-z_]\w*)"
                      r"(?:[,\s]+(?:in\s+)?(?P<down>desc\w*|reverse|newest\s+first)\b|[,\s]+(?:in\s+)?asc\w*\b)?", re.I)


def _read_matching(request: str, table: str) -> str | None:
    r"""A read of the rows of a named table whose column holds, starts or ends with a text (a LIKE), or of all its
    rows in a column's order (an ORDER BY), or both, when the request asks for no other filter or order.

    >>> print(_read_matching("Get all notes whose title contains 'milk'.", "notes"))
    ^SELECT \* FROM notes WHERE title LIKE '%milk%'$
    >>> print(_read_matching("Which notes have 'Acme' in their body?", "notes"))
    ^SELECT \* FROM notes WHERE body LIKE '%Acme%'$
    >>> print(_read_matching("Which of my notes mention 'Alice'?", "notes"))  # no column named: any
    ^SELECT \* FROM notes WHERE ([A-Za-z][A-Za-z0-9_]{0,30}) LIKE '%Alice%'$
    >>> print(_read_matching("How many notes mention milk in their body?", "notes"))
    ^SELECT COUNT\(\*\) FROM notes WHERE body LIKE '%milk%'$
    >>> print(_read_matching("Find the notes whose title starts with 'Shop', sorted by id", "notes"))
    ^SELECT \* FROM notes WHERE title LIKE 'Shop%' ORDER BY id$
    >>> print(_read_matching("Give me every note, sorted by id descending.", "notes"))
    ^SELECT \* FROM notes ORDER BY id DESC$
    >>> _read_matching("Show notes whose title contains 'a' and whose body is 'b'", "notes") is None  # another filter
    True
    >>> _read_matching("Show notes whose title contains 'a' or 'b'", "notes") is None  # another value
    True
    """
    rest, where, order = request, "", ""
    for pattern, like in _MATCHING:
        found = pattern.search(rest)
        if found is None:
            continue
        column, value = found.groupdict().get("column"), next(v for k, v in found.groupdict().items() if k != "column" and v)
        if (column and column.lower() in _ROW_FILLER | STOPWORDS) or not _ROW_LITERAL.fullmatch(value):
            return None
        column = column or _COLUMN
        where = f" WHERE {column} LIKE '{like.format(value)}'"
        rest = rest[:found.start()] + " " + rest[found.end():]
        break
    ordered = _ORDERED.search(rest)
    if ordered:
        if ordered.group("column").lower() in _ROW_FILLER | STOPWORDS:
            return None
        order = f" ORDER BY {ordered.group('column')}" + (" DESC" if ordered.group("down") else "")
        rest = rest[:ordered.start()] + " " + rest[ordered.end():]
    # what is left states no other value and asks for no other filter (its first word may be the question's "which")
    if not (where or order) or re.search(r"'[^']*'|\"[^\"]*\"|\d|\bby\b", rest) or \
            _FILTERED.search(re.sub(r"^\W*\w+", " ", rest).replace(f"{table} table", " ")):
        return None
    return _select(request, table, where + order)


def _read_where(request: str, table: str) -> str | None:
    r"""A read of the rows of a named table that have one value in one column, written after "with", "whose" or
    "where" and its column ("the note with id 1", "whose title is 'x'"), when the request states no other value and asks
    for no other filter or order. Free, the model wrote "SELECT id, name, email FROM notes WHERE id = 1" for "Fetch the
    note with id 1 from the notes table." (set 74; the server refused: no such column).

    >>> print(_read_where("Fetch the note with id 1 from the notes table.", "notes"))
    ^SELECT \* FROM notes WHERE (id) = (1)$
    >>> print(_read_where("Show the rows of the notes table whose title is 'Call Alice'.", "notes"))
    ^SELECT \* FROM notes WHERE (title) = ('Call Alice')$
    >>> _read_where("Show notes with id 1 or 2 from the notes table", "notes"), _read_where("Get 3 notes with id 1", "notes")
    (None, None)
    >>> _read_where("Show the notes table rows whose title contains 'milk'", "notes") is None  # a LIKE, not an equality
    True

    A participle before the value names its column too ("the note titled 'Call Alice'": the model had looped):

    >>> print(_read_where("Fetch the body of the note titled 'Call Alice'.", "notes"))
    ^SELECT \* FROM notes WHERE (title) = ('Call Alice')$
    """
    stated = _row_values(request)
    found = list(re.finditer(rf"\b(?:with|whose|where)\s+(?:the\s+|an?\s+)?{_BEFORE_VALUE}('[^']*'|\d+(?:\.\d+)?(?![\w.]))",
                             request, re.I)) or \
        [m for m in re.finditer(r"\b(?!(?:named|called)\b)([A-Za-z]{3,}ed)\s+('[^']*')", request)
         if _column_names(m.group(1)) != [m.group(1)]]  # "named 'x'" names no column
    if stated is None or len(stated[1]) != 1 or len(found) != 1:
        return None
    word, value = found[0].group(1), found[0].group(2)
    rest = (request[:found[0].start()] + " " + request[found[0].end():]).replace(f"{table} table", " ")
    if word.lower() in _ROW_FILLER | STOPWORDS or _FILTERED.search(rest):
        return None
    return f"^SELECT \\* FROM {table} WHERE {_one_of(_column_names(word))} = {_one_of([value])}$"


def _column_names(word: str) -> list[str]:
    """The column a word before a value names: itself, or for a participle ("titled 'Pay rent'", "tagged 'urgent'")
    the noun it is made from, in its likely spellings (the model had written the column "titled"). A stem no English
    word ends like (a consonant before l or r, or a v or u) has only the spelling with e: offered "titl" too, the
    model wrote `WHERE titl = 'Book the dentist'` (held-out set 62).

    >>> _column_names("title"), _column_names("titled"), _column_names("tagged"), _column_names("speed")
    (['title'], ['title'], ['tag', 'tagg'], ['speed'])
    >>> _column_names("dated"), _column_names("listed"), _column_names("priced"), _column_names("valued")
    (['date', 'dat'], ['liste', 'list'], ['price', 'pric'], ['value'])
    """
    if len(word) <= 4 or not word.lower().endswith("ed") or word.lower().endswith("eed"):  # speed, seed: nouns
        return [word]
    stem = word[:-2]
    if stem[-1] == stem[-2] and stem[-1].lower() not in "aeiou":  # a doubled consonant: tagged, labelled
        return [stem[:-1], stem]
    if re.search(r"[^aeiouyl][lr]$|[vu]$", stem, re.I):  # titl, handl, centr, sav, valu: not how a word ends
        return [word[:-1]]
    return [word[:-1], stem]


def _one_of(options: Sequence[str]) -> str:
    """A pattern group of alternatives, each once, in order."""
    return "(" + "|".join(dict.fromkeys(options)) + ")"


def _times(item: str, n: int) -> str:
    """`item` n times, comma-separated, as a pattern ("a" 3 -> "a(, a){2}")."""
    return item + (f"(, {item}){{{n - 1}}}" if n > 1 else "")


def _promote(out: dict[str, Any], props: dict[str, Any], required: set[str], request: str) -> dict[str, Any]:
    """`out` with the optional parameters the request talks about made required (`parameters.mentioned`, a bare count
    of what it counts, a bound of a span of time it states) and those it rules out left out of its properties (the
    rival end of a count, `parameters.rival_counts`; the end of a span it does not state, `nexus.llm.bounds`); returns
    the properties kept."""
    from nexus.llm.bounds import bound, bound_phrases, stated_bounds
    from nexus.llm.parameters import bare_count, mentioned, rival_counts, unclaimed_counts

    promoted = [n for n, sub in props.items() if n not in required and isinstance(sub, dict) and mentioned(n, sub, request)]
    counts = [n for n, sub in props.items() if n not in required and n not in promoted and isinstance(sub, dict) and bare_count(n, sub)]
    # a span of time the request bounds ("since 2026-01-01"): each bound parameter of an end it states takes that value;
    # one of an end it does not state is not offered, and the span's numbers count nothing
    ends = {n: end for n, sub in props.items() if n not in required and isinstance(sub, dict) and (end := bound(n, sub))}
    spans = stated_bounds(request) if ends else {}
    spans = spans if any(end in spans for end in ends.values()) else {}  # an end some parameter takes
    if len(counts) == 1 and unclaimed_counts(bound_phrases(request) if spans else request, props):  # "the last two
        promoted += counts  # commits": git_log's max_count
    rivals = rival_counts(promoted, props, request)  # "the first 3 lines": head, not tail, which is not offered
    if spans:
        rivals |= {n for n, end in ends.items() if end not in spans}
        for n, end in ends.items():
            if end in spans:
                props[n] = {k: v for k, v in props[n].items() if k not in ("anyOf", "type", "format", "default")} | {
                    "type": "string", "enum": [spans[end]]}
                promoted.append(n)
    promoted = [n for n in promoted if n not in rivals]
    if rivals:
        props = out["properties"] = {n: sub for n, sub in props.items() if n not in rivals}
    if promoted:
        out["required"] = [n for n in props if n in required or n in promoted]
    return props


def grammar_schema(schema: Mapping[str, Any], request: str | None = None, context: str = "",
                   written_only: bool = False, description: str = "",
                   tables: Mapping[str, Mapping[str, str]] = {}) -> dict[str, Any]:
    """The schema the grammar is built from: `normalise_schema`, plus what a small model cannot be trusted to
    follow from the description alone — a 'City, State' format as a pattern, the statements a SQL parameter takes
    (`sql_pattern`; `tables`, those its server holds, named by their rows alone too), the values a required string's
    description lists as its only ones (`closed_choices`; the request naming one of them anchors it first), and (given
    the request) every
    optional parameter the request mentions (`nexus.llm.parameters.mentioned`) made required, each required time
    zone, currency, clock time, date or file path taken from those the request states (`_stated_choices`), and each
    required top-level number taken from the numbers the request states, when it states any (optional numbers
    stay free: constrained, the model fills them with a stated number that belongs elsewhere — measured). Each
    written parameter takes what the request ties to it when it ties anything (`_anchored`: a choice it names, a
    number next to its name, an id after it), a from/to pair of stated values is put the way round the request
    puts it (`nexus.llm.directions`), a list of choices holds the ones the request names, and a list of scalars has
    at most as many items as the request separates. Validation still checks the tool's own schema; this only
    narrows what the model may write. `context`, for a follow-up ("What about to Sydney?"), is the earlier requests
    it leans on: their zones, currencies, times, dates, paths and numbers are offered too where the turn itself
    states fewer than its parameters of that kind need (`_with_context`). `written_only` (given the request) keeps
    only the parameters the model is to write — the required ones and those the request mentions — for a decode
    after one that looped in an optional parameter the request never talks about."""
    from nexus.llm import anchors, directions
    from nexus.llm.choices import closed_choices
    from nexus.llm.stated import file_paths, is_rate_parameter, percent_only, request_numbers, request_path_choices, value_kind

    out = normalise_schema(schema)
    percents = percent_only(request) if request else set()
    props = out.get("properties") if isinstance(out.get("properties"), dict) else {}
    numbers = sorted(request_numbers(request) or (request_numbers(context) if context else set())) if request else []
    required = set(out.get("required") or [])
    if request:  # an optional parameter the request talks about is written (the model stops after the required ones)
        props = _promote(out, props, required, request)
    written = set(out.get("required") or [])
    if written_only and request:
        props = out["properties"] = {n: sub for n, sub in props.items() if n in written}
    shared = _shared_anchors(props, written, request) if request else set()
    stated_by_name = {n: _stated_choices(n, sub, request) for n, sub in props.items()
                      if request and n in required and isinstance(sub, dict) and "enum" not in sub}
    if request and context:
        stated_by_name = _with_context(stated_by_name, props, context)
    if request and (any("pattern" in n.lower() for n in props) or LISTS_FOLDERS.search(description or "")):
        # where a search for a pattern or a folder listing starts, when the request writes no path and names no folder:
        # the server's own root ("Look for any file whose name contains notes." had searched in a folder "notes", which
        # does not exist; "What files do I have?" listed "/home/ann/notes/todo.txt", a path from the prompt's examples)
        for n, stated in stated_by_name.items():
            if not stated and value_kind(n, props[n]) == "path":
                stated_by_name[n] = ["."]
    file_ends = _file_ends(props, stated_by_name, request, description) if request else set()
    if request:  # a from/to pair offered the same values: each side gets the one the request (or a follow-up's) places
        stated_by_name.update(directions.directed({n: v for n, v in stated_by_name.items() if v}, request,
                                                  lambda n, text: file_paths(text) if n in file_ends else
                                                  _stated_choices(n, props[n], text), context))
    for name, sub in props.items():
        if not isinstance(sub, dict) or "pattern" in sub:
            continue
        kind = _list_kind(sub) if request and sub.get("type") == "array" else None
        if kind == "scalars" and is_path_list_parameter(name, sub) and (paths := request_path_choices(request)):
            # a list of files takes the paths the request writes (git_add had got ["stage_notes.txt"] for "Stage
            # notes.txt.")
            listed = stated_path_list(request)  # a list of files the turn writes as one list is read whole (probe:
            # "Open notes.txt, config.ini and repo/README.md" had read two of them)
            _each_once(sub, paths, len(listed) if len(listed) >= 2 and set(listed) <= set(paths) else 1)
        elif kind == "scalars" and holds_names(name) and (names := request_names(request)):
            # a list of names takes the names the request writes ("Delete Acme from memory." had written entityNames
            # ["Acme", "Acme", ...] to the token cap, and the turn fell through to another tool)
            _each_once(sub, names)
            sub["maxItems"] = min(int(sub.get("maxItems", len(names))), len(names))
        if kind == "choices" or (kind == "scalars" and "maxItems" not in sub):
            # at most as many items as the request separates; a list of choices holds the ones the request names,
            # one each ("English fiction section and free Wi-Fi" -> ["Fiction", "Wi-Fi"]): uncapped, the model
            # repeated items until the token cap cut the call off
            low = int(sub.get("minItems", 1 if name in required else 0))
            named = anchors.stated_choices(sub["items"], request, 1) if kind == "choices" else []
            if named and len(named) >= low:
                sub["items"]["enum"] = named
            sub.setdefault("maxItems", max(len(named) or anchors.max_list_items(request), low, 1))
            if name in required:  # the model writes [] for "data: 85, 90, 88"; a required list has items
                sub.setdefault("minItems", 1)
        elif kind == "objects":  # a list of objects (and the lists inside them) is capped the same way: uncapped,
            _cap_lists(sub, anchors.max_list_items(request), text_cap=_note_length(request))  # the model wrote one
            # entity after another to the cap
            if name in required:  # and has items when required: "Add a relation: Bob manages Alice." had written
                sub.setdefault("minItems", 1)  # create_relations(relations=[]), a call that does nothing
            if isinstance(sub.get("items"), dict):  # an entity's name, a relation's ends: names the request writes
                name_fields(sub["items"], request_names(request), fact_subject(request))
        anchored = _anchored(name, sub, request, promoted=name not in required) if request and name in written else []
        if anchored and name in shared:  # "sides: 3, 4 and 5" anchors 3 to side1, side2 and side3 alike: to none
            anchored = []
        if sub.get("type") == "number" and percents:
            if not anchored and name in written and len(percents) == 1 and is_rate_parameter(name, sub):  # the one percentage is the rate
                anchored = [next(iter(percents)), next(iter(percents)) / 100]
            anchored = _as_fractions(anchored, sub, percents)
        if anchored:  # what the request names for this very parameter (`nexus.llm.anchors`)
            sub["enum"] = anchored
            sub.pop("format", None)
            continue
        if "enum" in sub:
            continue
        stated = stated_by_name.get(name, [])
        if stated:
            sub["enum"] = stated
            sub.pop("format", None)
            continue
        if "format" in sub:
            continue
        kind = sub.get("type")
        if request and name in required and is_expression_parameter(name, sub) and (whole := sole_expression(request)):
            sub["enum"] = [whole]  # the one expression the request states, in symbols (the model had added "= 7.5")
            continue
        listed = closed_choices(sub) if name in required else []
        if listed:  # "Whether to list local ('local'), remote ('remote') or all ('all')": the model wrote "git"
            sub["enum"] = listed
            continue
        if kind == "string" and CITY_STATE.search(str(sub.get("description", ""))) and \
                "country" not in str(sub.get("description", "")).lower():
            sub["pattern"] = CITY_STATE_PATTERN
        elif kind == "string" and (sql := sql_pattern(str(sub.get("description", "")), request or "",
                                                      description if is_sql_parameter(name, sub) else "", tables)):
            sub["pattern"] = sql
        elif kind in ("number", "integer") and numbers and name in written:  # required, or promoted: talked about
            low, high = sub.get("minimum", -math.inf), sub.get("maximum", math.inf)
            options = [n for n in numbers if (kind == "number" or n == int(n)) and low <= n <= high]
            options = [int(n) if n == int(n) else n for n in _as_fractions(options, sub, percents)]
            if options:
                sub["enum"] = options
    return out


def _file_ends(props: Mapping[str, Any], stated: dict[str, list[str]], request: str, description: str) -> set[str]:
    """The from/to pair of a tool about files that names no path (move_file's source and destination), offered the
    files the request writes when it writes one for each end (`stated` updated); `directions` then places them.
    "Rename notes.txt to notes-old.txt in my workspace." had moved notes-old.txt to notes-new.txt, a name the request
    never wrote (set 72; the server refused it). One file and one folder the request names ("into the drafts folder")
    give the file and the file inside that folder, one for each end."""
    from nexus.llm import directions
    from nexus.llm.stated import HERE_WORDS, NAMED_FOLDER, file_paths, value_kind

    if not FILES_TOOL.search(description or ""):
        return set()
    ends = [n for n, v in stated.items() if not v and directions.direction(n) and value_kind(n, props[n]) is None]
    files = file_paths(request)
    if {directions.direction(n) for n in ends} != {"source", "target"}:
        return set()
    folders = [a or b for a, b in NAMED_FOLDER.findall(request) if (a or b).lower() not in HERE_WORDS]
    if len(ends) == 2 and len(files) == 1 and len(set(folders)) == 1:  # "Move config.ini into the drafts folder." had
        # moved it to "my_workspace": the file, and the file inside the folder the request names
        stated.update({n: files if directions.direction(n) == "source" else [f"{folders[0]}/{files[0].rsplit('/', 1)[-1]}"]
                       for n in ends})
        return set()  # each end has its one value: nothing for `directions` to place
    if len(files) < len(ends):
        return set()
    stated.update({n: files for n in ends})
    return set(ends)


def _with_context(stated: dict[str, list[str]], props: Mapping[str, Any], context: str) -> dict[str, list[str]]:
    """Each parameter's stated values, followed by the context's values of the same kind when the turn states fewer
    of that kind than there are such parameters: "What about to Sydney?" after "Convert 10:00 from Paris time to New
    York time" offers Sydney, then Paris and New York, to source and target zones alike.

    >>> zone = {"type": "string", "description": "IANA timezone name"}
    >>> _with_context({"source_timezone": ["Australia/Sydney"], "target_timezone": ["Australia/Sydney"]},
    ...               {"source_timezone": zone, "target_timezone": zone}, "Convert 10:00 from Paris time to New York time")
    {'source_timezone': ['Australia/Sydney', 'Europe/Paris', 'America/New_York'], 'target_timezone': ['Australia/Sydney', 'Europe/Paris', 'America/New_York']}
    """
    from nexus.llm.stated import value_kind

    kinds = {name: value_kind(name, props[name]) for name in stated}
    out = dict(stated)
    for name, values in stated.items():
        kind = kinds[name]
        if kind is None or len(values) >= sum(k == kind for k in kinds.values()):
            continue
        out[name] = values + [v for v in _stated_choices(name, props[name], context) if v not in values]
    return out


def _shared_anchors(props: Mapping[str, Any], written: set[str], request: str) -> set[str]:
    """Written number, identifier and name parameters whose anchored values another one has too (their name words
    differ only in what the request does not say: side1, side2, side3 for "sides"; source_branch_name and
    target_branch_name for "the feature branch")."""
    from nexus.llm import anchors

    seen: dict[str, list[str]] = {}
    for name in written:
        sub = props.get(name)
        if not isinstance(sub, Mapping):
            continue
        if sub.get("type") in ("number", "integer"):
            values = anchors.anchored_numbers(name, request)
        elif sub.get("type") in ("string", None) and "enum" not in sub:
            values = anchors.anchored_strings(name, request)
        else:
            continue
        if values:
            seen.setdefault(repr(values), []).append(name)
    return {name for names in seen.values() if len(names) > 1 for name in names}


def _list_kind(schema: Mapping[str, Any]) -> str | None:
    """"choices" for a list of enum strings, "scalars" for a list of free strings or numbers, "objects" for a list
    of objects, else None."""
    items = schema.get("items")
    if not isinstance(items, Mapping):
        return None
    if "enum" in items:
        return "choices" if isinstance(items["enum"], list) and items.get("type") in ("string", None) else None
    if items.get("type") == "object" and isinstance(items.get("properties"), Mapping):
        return "objects"
    return "scalars" if items.get("type") in ("string", "number", "integer") else None


def _note_length(request: str) -> int:
    """How long a free-text item of a list inside an object may be: 40 characters (shorter than the decoder's loop
    guard, 48 tokens, so a run of one character ends as a string, not as a rejected call), or the request's longest
    quoted span, which is copied whole.

    >>> _note_length("Add Tokyo, a city"), _note_length("Note 'the meeting moved to Thursday afternoon at the main office'")
    (40, 60)
    """
    from nexus.llm.words import quoted_spans

    return max([40, *(len(q) + 2 for q in quoted_spans(request))])


def _cap_lists(schema: dict[str, Any], cap: int, depth: int = 0, text_cap: int | None = None) -> None:
    """At most `cap` items (never fewer than its minItems) for a list and for every list inside its items' objects;
    with `text_cap`, a free-text item of a list inside an object has at most that many characters.

    >>> s = {"type": "array", "items": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}}
    >>> _cap_lists(s, 2, text_cap=40); s["maxItems"], s["items"]["properties"]["tags"]["maxItems"], s["items"]["properties"]["tags"]["items"]
    (2, 2, {'type': 'string', 'maxLength': 40})
    """
    if depth > 4 or "maxItems" in schema:
        return
    schema["maxItems"] = max(cap, int(schema.get("minItems", 0)), 1)
    items = schema.get("items")
    if depth and text_cap and isinstance(items, dict) and items.get("type") == "string" and not (
            {"enum", "pattern", "format", "maxLength"} & set(items)):
        # create_entities' observations for "Add an entity named Tokyo of type city": the model wrote "1000000…" until
        # the loop guard stopped it, twice, and the turn fell back to every schema (24 s) and the wrong tool
        items["maxLength"] = text_cap
    for sub in (items.get("properties") or {}).values() if isinstance(items, dict) else ():
        if isinstance(sub, dict) and sub.get("type") == "array" and isinstance(sub.get("items"), dict):
            _cap_lists(sub, cap, depth + 1, text_cap)


def _as_fractions(options: list[Any], schema: Mapping[str, Any], percents: set[float]) -> list[Any]:
    """Options without the bare number of a stated percentage when the parameter takes fractions (8% is 0.08:
    the model writes 8 when offered both — measured), or without the fraction when it asks for a percentage."""
    from nexus.llm.stated import wants_fraction

    fraction = wants_fraction(schema)
    drop = percents if fraction else {p / 100 for p in percents}
    kept = [o for o in options if o not in drop]
    return kept if kept else options


def _anchored(name: str, schema: Mapping[str, Any], request: str, promoted: bool = False) -> list[Any]:
    """The values a written parameter takes from words of the request that name it: the choices it names (an enum
    or listed choices; one listed choice is enough for a parameter promoted because the request names it), the
    numbers next to a word of its name (within its range), an identifier after it."""
    from nexus.llm import anchors

    kind = schema.get("type")
    if kind in ("number", "integer"):
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
        numbers = [n for n in anchors.anchored_numbers(name, request) if (kind == "number" or n == int(n)) and low <= n <= high]
        return [int(n) if n == int(n) else n for n in numbers]
    if kind not in ("string", None):
        return []
    choices = anchors.stated_choices(schema, request, 1 if promoted else anchors.MIN_LISTED)
    if choices or "enum" in schema:
        return choices
    return anchors.anchored_strings(name, request)




def _stated_choices(name: str, schema: Mapping[str, Any], request: str) -> list[str]:
    """The values a required string parameter can take from the request, when it asks for a kind of value the
    request states: its time zones (a zone parameter), currencies (ISO codes), clock times (HH:MM), dates
    (YYYY-MM-DD, or the layout its description spells out), file paths, for a revision the one ref the request writes
    (a hash, HEAD~N) or `HEAD` when it asks about the latest commit and writes no hash, or for a content, text or body parameter the text it gives
    unquoted after "the text" (`stated.unquoted_text`)."""
    from nexus.llm import currencies, layouts, parameters, stated

    if parameters.is_revision(name, schema):  # git_show had got "2024-01-15T14:30:25" for "Show me the details of the
        # latest commit." (the server refused it), and looped in a free string for "Show the details of commit HEAD~1"
        refs = list(dict.fromkeys(parameters.WRITTEN_REF.findall(request)))
        if len(refs) == 1 and not parameters.RELATIVE_REF.search(request):
            return refs
        return ["HEAD"] if parameters.LATEST_COMMIT.search(request) and not parameters.NOT_HEAD.search(request) else []
    if stated.TEXT_PARAMETER.fullmatch(name) and (text := stated.unquoted_text(request)):  # "Save the text buy milk
        # into todo.txt" had written content "bye.txt" or "milk": the span after "the text", as it is
        return [text]
    kind = stated.value_kind(name, schema)
    if kind == "zone":
        return stated.request_zones(request)
    if kind == "currency":
        return currencies.request_currencies(request)
    if kind == "layout":
        return layouts.request_dates_in(layouts.date_layout(schema), request)
    if kind == "time":
        return sorted(stated.request_times(request))
    if kind == "date":
        return stated.request_full_dates(request)
    if kind == "path":  # the paths it writes, else a folder it talks about (`stated.unwritten_folder`)
        return stated.request_path_choices(request) or stated.unwritten_folder(request)
    return []


def arguments_gbnf(schema: Mapping[str, Any], request: str | None = None, context: str = "",
                   written_only: bool = False, description: str = "",
                   tables: Mapping[str, Mapping[str, str]] = {}) -> str:
    """GBNF for `" " + <JSON arguments conforming to schema>` (cached by schema content); with the request (and the
    earlier requests a follow-up leans on), built from `grammar_schema` (`description`: the tool's own)."""
    shaped = grammar_schema(schema, request, context, written_only, description, tables) if request is not None \
        else normalise_schema(schema)
    return _arguments_gbnf(json.dumps(shaped, sort_keys=False, ensure_ascii=False))


def choice_gbnf(options: Sequence[str]) -> str:
    """GBNF for exactly one of `options`, each preceded by a space (for servers without token-level control)."""
    if not options:
        raise ValueError("choice_gbnf needs at least one option")
    return "root ::= " + " | ".join(_gbnf_literal(" " + option) for option in options)
