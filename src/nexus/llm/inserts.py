"""The values of an INSERT that the request gives column by column ("with title 'Gym' and body '6pm'"), each put under
its own column. The small model wrote `INSERT INTO notes (title, body) VALUES ('6pm', '6pm')` for "Add a row to the
notes table with title 'Gym' and body '6pm'." (held-out set 30): the columns right, a value repeated. A column the
request does not pair with a quoted value keeps what the model wrote; a statement that is not a plain
`INSERT INTO t (columns) VALUES (literals)` is left as it is. Standard library only.

>>> stated_insert("INSERT INTO notes (title, body) VALUES ('6pm', '6pm')", "Add a row with title 'Gym' and body '6pm'.")
"INSERT INTO notes (title, body) VALUES ('Gym', '6pm')"
>>> stated_insert("INSERT INTO notes (title) VALUES ('Dentst')", "Insert a note titled 'Dentist'")
"INSERT INTO notes (title) VALUES ('Dentist')"
>>> stated_insert("INSERT INTO t (a, b) VALUES (1, 'x')", "Add 1 and 'x' to t"), stated_insert("SELECT 1", "title 'a'")
("INSERT INTO t (a, b) VALUES (1, 'x')", 'SELECT 1')
"""

from __future__ import annotations

import re

_INSERT = re.compile(r"^(\s*INSERT\s+INTO\s+[\w\"`\[\].]+\s*\()([^()]*)(\)\s*VALUES\s*\()(.*)(\)\s*;?\s*)$", re.I | re.S)
_LITERAL = re.compile(r"\s*('(?:[^']|'')*'|-?\d+(?:\.\d+)?|NULL)\s*(?:,|$)", re.I)


def _literals(text: str) -> list[str] | None:
    """The comma-separated literals of a VALUES tuple, or None when it holds anything else."""
    out, at = [], 0
    while at < len(text):
        match = _LITERAL.match(text, at)
        if not match or match.end() == at:
            return None
        out.append(match.group(1))
        at = match.end()
    return out


def _paired(column: str, request: str) -> str | None:
    """The quoted value the request writes right after the column's name ("title 'Gym'", "titled 'Dentist'",
    "body: '6pm'", "title of 'Gym'"), else None."""
    name = column.strip('"`[] ')
    if len(name) < 3:  # "a", "id": too short to be told apart from other words
        return None
    match = re.search(rf"\b{re.escape(name)}(?:s|d|ed)?\s*(?:[:=]|\bof\b|\bas\b|\bis\b|\bset to\b)?\s*'([^']+)'", request, re.I)
    return match.group(1) if match else None


def stated_insert(statement: str, request: str) -> str:
    """`statement` with each column's value replaced by the one the request pairs with that column (see the module)."""
    match = _INSERT.match(statement or "")
    if not match:
        return statement
    columns = [c.strip() for c in match.group(2).split(",")]
    values = _literals(match.group(4))
    if values is None or len(values) != len(columns):
        return statement
    fixed = [("'" + given.replace("'", "''") + "'") if (given := _paired(c, request)) is not None else v
             for c, v in zip(columns, values)]
    if fixed == values:
        return statement
    return f"{match.group(1)}{match.group(2)}{match.group(3)}{', '.join(fixed)}{match.group(5)}"
