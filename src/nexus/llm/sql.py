"""SQL values: the statement the request writes out, a WHERE clause of values it never states dropped, and each
column of a CREATE TABLE defined once.

>>> stated_filter("SELECT * FROM notes WHERE name = 'John'", "Get every row from the notes table.")
'SELECT * FROM notes'
"""

from __future__ import annotations

import re
from typing import Collection

from text_to_num import alpha2digit

from nexus.gate.evidence import sql_statements
from nexus.llm.stated import stated

def stated_statement(statement: str, request: str) -> str:
    """The request's own SQL statement when it writes out exactly one (`evidence.sql_statements`) and the model wrote
    another: "Run this SQL: DELETE FROM notes WHERE id = 3." came out as `SELECT * FROM notes WHERE id = 3`, a
    different statement; the user's is run as written, or refused by the server as written.

    >>> stated_statement("SELECT * FROM notes WHERE id = 3", "Run this SQL: DELETE FROM notes WHERE id = 3.")
    'DELETE FROM notes WHERE id = 3'
    >>> stated_statement("SELECT * FROM notes", "Show every note"), stated_statement("SELECT 1 FROM t;", "Run SELECT 1 FROM t")
    ('SELECT * FROM notes', 'SELECT 1 FROM t;')
    """
    stated = sql_statements(request)
    if len(stated) != 1 or " ".join(statement.rstrip(" ;").split()) == " ".join(stated[0].split()):
        return statement
    return stated[0]


# a table a statement reads or writes (not one it creates), with its quotes
_TABLE_REF = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+[\"`\[]?(?P<name>[A-Za-z_]\w*)", re.I)
_TABLE_WORD = re.compile(r"^tables?_|_?tables?$", re.I)


def known_tables(statement: str, tables: Collection[str]) -> str:
    """A statement with each table it reads or writes that the database does not hold, but whose name less the word
    "table" it does, named as the database names it: "Which titles do the notes in the notes table have?" came out as
    `SELECT * FROM notes_table` ("no such table"), with `notes` among the server's tables (`Tool.tables`).

    >>> known_tables("SELECT title FROM notes_table WHERE id = 2", {"notes": {}})
    'SELECT title FROM notes WHERE id = 2'
    >>> known_tables("INSERT INTO NotesTable (title) VALUES ('x')", ["notes"]), known_tables("SELECT * FROM pets_table", ["notes"])
    ("INSERT INTO notes (title) VALUES ('x')", 'SELECT * FROM pets_table')
    >>> known_tables("CREATE TABLE notes_table (a TEXT)", ["notes"]), known_tables("SELECT * FROM notes_table", [])
    ('CREATE TABLE notes_table (a TEXT)', 'SELECT * FROM notes_table')
    """
    known = {t.lower(): t for t in tables}
    if not known or not statement:
        return statement

    def named(match: re.Match) -> str:
        name = match.group("name")
        found = None if name.lower() in known else known.get(_TABLE_WORD.sub("", name).lower())
        if found is None:
            return match.group(0)
        start, end = match.start("name") - match.start(0), match.end("name") - match.start(0)
        return match.group(0)[:start] + found + match.group(0)[end:]

    return _TABLE_REF.sub(named, statement)


_CREATE_TABLE = re.compile(r"^(\s*CREATE TABLE\s+\S+\s*\()(.*)(\)\s*;?\s*)$", re.I | re.S)


_SELECT_WHERE = re.compile(r"^(\s*SELECT\b.*?)\s+WHERE\s+(.*?)(\s+(?:GROUP\s+BY|ORDER\s+BY|LIMIT)\b.*)?$", re.I | re.S)
# the values a SQL statement writes or compares with: quoted strings and numbers (not inside a name: "notes2", "t1.id")
_LITERAL = re.compile(r"'((?:[^']|'')*)'|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])")


def unstated_literals(statement: str, request: str) -> list[str]:
    """The quoted strings and numbers of a SQL statement (or clause) that the request does not state (`stated`).

    >>> unstated_literals("INSERT INTO notes (title, n) VALUES ('buy milk', 1000000)", "Add a note saying 'buy milk'")
    ['1000000']
    """
    out = []
    for text, number in _LITERAL.findall(statement or ""):
        literal = number or text.replace("''", "'")
        if literal.strip() and not stated("value", float(number) if number else literal, request, {}):
            out.append(literal)
    return out


def stated_filter(statement: str, request: str) -> str:
    """A SELECT without its WHERE clause when the clause compares with a value the request does not state: "Get every
    row from the notes table." came out as `SELECT * FROM notes WHERE name = 'John'` (no such column, and no John
    asked for). The rows asked for are a part of what is left. A clause of stated values stays.

    >>> stated_filter("SELECT * FROM notes WHERE name = 'John' ORDER BY id", "Get every row from the notes table.")
    'SELECT * FROM notes ORDER BY id'
    >>> stated_filter("SELECT title FROM notes WHERE id = 2", "Show the title of note 2")
    'SELECT title FROM notes WHERE id = 2'
    """
    match = _SELECT_WHERE.match(statement or "")
    if not match:
        return statement
    return statement if not unstated_literals(match.group(2), request) else match.group(1) + (match.group(3) or "")


_SELECT = re.compile(r"^\s*SELECT\b", re.I)
_HAS_LIMIT = re.compile(r"\bLIMIT\b", re.I)
# "the first five rows", "top 3", "limit it to 10", "show 4 records": how many rows the request asks for
_ROWS_ASKED = re.compile(r"\b(?:first|top|limit(?:ed)?(?: it)? to|only|just)\s+(\d+)\b(?!\s*(?:%|percent|am|pm|:))|"
                         r"\b(\d+)\s+(?:rows|records|entries|results)\b", re.I)


def stated_limit(statement: str, request: str) -> str:
    """A SELECT with `LIMIT n` when the request asks for n rows ("Pull the first five rows from the notes table." had
    returned every row) and the model wrote no LIMIT; anything else is returned unchanged.

    >>> stated_limit("SELECT * FROM notes", "Pull the first five rows from the notes table.")
    'SELECT * FROM notes LIMIT 5'
    >>> stated_limit("SELECT * FROM notes;", "Show 3 records of notes"), stated_limit("SELECT * FROM t LIMIT 2", "top 9")
    ('SELECT * FROM notes LIMIT 3;', 'SELECT * FROM t LIMIT 2')
    >>> stated_limit("SELECT * FROM notes WHERE id = 5", "Show note 5"), stated_limit("DELETE FROM t", "the first 2 rows")
    ('SELECT * FROM notes WHERE id = 5', 'DELETE FROM t')
    """
    if not _SELECT.match(statement or "") or _HAS_LIMIT.search(statement):
        return statement
    asked = {int(a or b) for a, b in _ROWS_ASKED.findall(alpha2digit(request or "", "en"))}
    if len(asked) != 1 or not 0 < next(iter(asked)) <= 10_000:
        return statement
    body = statement.rstrip()
    end = ";" if body.endswith(";") else ""
    return f"{body.rstrip(';').rstrip()} LIMIT {asked.pop()}{end}"


def unique_columns(statement: str) -> str:
    """A CREATE TABLE statement with each column defined once (the first definition kept): no database accepts a
    column twice, and a small model repeats one ("a table called contacts with name and email columns" came out as
    `(name TEXT, email TEXT, name TEXT)`, which sqlite refused). Anything else is returned unchanged.

    >>> unique_columns("CREATE TABLE contacts (name TEXT, email TEXT, name TEXT)")
    'CREATE TABLE contacts (name TEXT, email TEXT)'
    >>> unique_columns("CREATE TABLE t (a NUMERIC(10, 2), b TEXT)"), unique_columns("SELECT a, a FROM t")
    ('CREATE TABLE t (a NUMERIC(10, 2), b TEXT)', 'SELECT a, a FROM t')
    """
    match = _CREATE_TABLE.match(statement)
    if not match or "(" in match.group(2):  # typed sizes or constraints with brackets: not split on commas
        return statement
    columns = match.group(2).split(",")
    kept: dict[str, str] = {}
    for column in columns:
        if column.split() and (name := column.split()[0].strip('"`[]').lower()):
            kept.setdefault(name, column.strip())
    return f"{match.group(1)}{', '.join(kept.values())}{match.group(3)}" if len(kept) < len(columns) else statement
