"""Evidence in the turn's words that a candidate tool is asked for, weighed against a NO_TOOL: an arithmetic
expression stated in a registry where a candidate takes an expression and nothing else, or a SQL statement written out
where a candidate takes only a statement of its kind (`stated_sql`, `runs_sql`; the same reasoning, below).

Why the gate needs it: its cross-encoder learnt maths requests as needing no tool. BFCL's `irrelevance` turns include
maths questions whose own record had no calculator, and the training data holds about 35 calculator turns in all
(docs/history.md, "Session 15"), so it scores the calculator server's `calculate` ("Calculates/evaluates the given expression")
at -6 to -8 for "What is 12.5 * 8 + 3?" and p_no_tool lands at 0.91-0.99, while that tool is the SLB's first
candidate. Retraining on fixed labels did not change it (docs/history.md, "Session 10"). This check reads the schema (a string
parameter named expression / formula / equation) and the request (numbers joined by operators, or by the words
for them), never a tool's name; on a registry without such a tool it never fires (no BFCL evaluation registry has
one). Pure Python (the signatures' identifier splitter reads parameter names).

>>> stated_expression("What is 12.5 * 8 + 3?"), stated_expression("Multiply 17 by 23."), stated_expression("Thanks!")
('12.5 * 8 + 3', '17 * 23', None)
>>> stated_expression("2 raised to the 10th power"), stated_expression("What's the square root of 144?")
('2 ** 10', '144 ** 0.5')
>>> stated_expression("What is the sum of 2 and 3?"), stated_expression("What is 2^3?")
('2 + 3', '2 ** 3')
>>> stated_expression("What's twelve times eight?"), stated_expression("Show the last two commits.")
('12 * 8', None)
>>> stated_expression("Add up 19, 23 and 58."), stated_expression("the product of 2, 3, and 4")
('19 + 23 + 58', '2 * 3 * 4')
>>> stated_expression("Book a table on 2023-10-06 for 2"), stated_expression("my order 418901918/9568919778")
(None, None)
>>> takes_only_expression({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]})
True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

from text_to_num import alpha2digit

from nexus.gate.memory import adds_to_memory, asks_memory, asks_to_forget, asks_to_keep, keeps_memory, removes_from_memory
from nexus.paths import PATHS
from nexus.signatures.compiler import split_identifier

_LIST_JOINER = re.compile(r"\s*(?:,|&|\band\b|\bplus\b|\bas well as\b|,\s*and\b|\s)\s*", re.I)
_SENT_ON = re.compile(r"\b(?:to|into|onto|as|in|under|inside)\b", re.I)
EXPRESSION_NAME = frozenset(("expression", "expr", "formula", "equation"))
# arithmetic in words -> operators; the verb forms ("multiply 17 by 23") come first, before "by" is read as anything else
_NUM = r"(-?\d+(?:\.\d+)?)"
_ORDINAL = r"(?:st|nd|rd|th)?"
_LIST = rf"{_NUM}(?:\s*,\s*{_NUM})+,?\s+and\s+{_NUM}"  # "19, 23 and 58"


def _joined(operator: str) -> Callable[[re.Match], str]:
    """The numbers of a listed match joined by `operator` ("add up 19, 23 and 58" -> " 19 + 23 + 58 ")."""
    return lambda m: " " + f" {operator} ".join(re.findall(_NUM, m.group(0))) + " "


def _mean(m: re.Match) -> str:
    """The mean of a listed match ("the average of 10, 20 and 30" -> " (10 + 20 + 30) / 3 ")."""
    numbers = re.findall(_NUM, m.group(0))
    return f" ({' + '.join(numbers)}) / {len(numbers)} "


ARITHMETIC = (
    # a mean ("What's the average of 10, 20 and 30?" had been told NO_TOOL), then three numbers or more in a list,
    # before the two-number forms read its last two alone
    (rf"\b(?:average|mean)\s+of\s+(?:{_LIST}|{_NUM}\s+and\s+{_NUM})", _mean),
    (rf"\b(?:add\s+(?:up\s+)?|(?:sum|total)\s+of\s+){_LIST}", _joined("+")),
    (rf"\b(?:multiply\s+|product\s+of\s+){_LIST}", _joined("*")),
    (rf"\bmultiply\s+{_NUM}\s+(?:by|and|with)\s+{_NUM}", r" \1 * \2 "),
    (rf"\bdivide\s+{_NUM}\s+by\s+{_NUM}", r" \1 / \2 "),
    # a share: "split 480 into 6 equal parts" (held-out set 78 had listed file sizes for "how big is each part?")
    (rf"\b(?:split|divide|share)\s+{_NUM}\s+(?:into|between|among)\s+{_NUM}\b", r" \1 / \2 "),
    (rf"\badd\s+(?:up\s+)?{_NUM}\s+(?:and|to|plus)\s+{_NUM}", r" \1 + \2 "),
    (rf"\bsubtract\s+{_NUM}\s+from\s+{_NUM}", r" \2 - \1 "),
    (rf"\bsum\s+of\s+{_NUM}\s+and\s+{_NUM}", r" \1 + \2 "),
    (rf"\bproduct\s+of\s+{_NUM}\s+and\s+{_NUM}", r" \1 * \2 "),
    (rf"\bdifference\s+between\s+{_NUM}\s+and\s+{_NUM}", r" \1 - \2 "),
    # a step after a number ("Multiply 12.5 by 4 and then subtract 7": the model had written "12.5*4 = 7.5")
    (rf"([\d)])\s*,?\s*(?:and\s+)?(?:then\s+)?subtract\s+{_NUM}(?!\s*(?:from\b|\d))", r"\1 - \2 "),
    (rf"([\d)])\s*,?\s*(?:and\s+)?(?:then\s+)?add\s+{_NUM}(?!\s*(?:and|to|plus)\b|\s*\d)", r"\1 + \2 "),
    (r"(?<=\d)\s*\^\s*(?=[\d(])", " ** "),
    (rf"\b(?:raised\s+)?to\s+the\s+{_NUM}{_ORDINAL}\s+power\b|\braised\s+to\s+(?:the\s+)?{_NUM}{_ORDINAL}\b",
     lambda m: f" ** {m.group(1) or m.group(2)} "),
    (rf"\b(?:square\s+root|sqrt)\s+(?:of\s+)?{_NUM}", r" \1 ** 0.5 "),  # "sqrt of 81?" had been read as a follow-up
    (rf"\bcube\s+root\s+of\s+{_NUM}", r" \1 ** (1 / 3) "),
    (r"\bmultiplied by\b|\btimes\b|(?<=\d)\s*[x×]\s*(?=\d)", " * "),
    (r"\bdivided by\b|÷", " / "),
    (r"\bplus\b", " + "),
    (r"\bminus\b", " - "),
    (r"\bto the power of\b|\braised to\b", " ** "),
    (r"\bsquared\b", " ** 2 "),
    (r"\bcubed\b", " ** 3 "),
    (r"(\d+(?:\.\d+)?)\s*(?:%|percent)\s+of\b", r" \1 / 100 * "),
)
EXPRESSION_SPAN = re.compile(r"[\d(.][\d\s.+\-*/%()]*[\d)]")
# text that looks like arithmetic and is not, left out before reading: dates, clock times, ids with a slash, and
# two numbers joined by a hyphen that are no operand (a range or an id: "10-12", "+91-98765"; "23)/89-34" stays)
_NOT_ARITHMETIC = re.compile(r"\b\d{1,4}[./-]\d{1,2}[./-]\d{1,4}\b|\b\d{1,2}:\d{2}\b|\b\d{5,}/\d+\b"
                             r"|(?<![\d)][*/+%^])(?<![\d)]\s[*/+%^])(?<![\d)][*/+%^]\s)(?<![\d)]\s[*/+%^]\s)"
                             r"\b\d+-\d+\b(?!\s*[*/+%^]\s*[\d(])")
_BINARY = re.compile(r"[\d)]\s*(?:\*\*|[+\-*/%])\s*[\d(]")


def operators(text: str) -> str:
    """`text` with numbers written in words as digits and arithmetic words as operators ("twelve times 8" ->
    "12  *  8"). A lone small number stays a word ("the last two commits"): `alpha2digit`'s own rule."""
    text = alpha2digit(text, "en")
    for pattern, symbol in ARITHMETIC:
        text = re.sub(pattern, symbol, text, flags=re.I)
    return text


def expression_spans(text: str) -> list[str]:
    """Each arithmetic expression the text states (two numbers or more joined by operators, in symbols or in words),
    in order. Dates, clock times, ranges ("10-12") and ids ("4189/95") are not expressions.

    >>> expression_spans("add 2 + 3, then 4 times 5 on 2024-05-01"), expression_spans("(45*67+23)/89-34 or 10-12")
    (['2 + 3', '4 * 5'], ['(45*67+23)/89-34'])
    """
    cleaned = _NOT_ARITHMETIC.sub(" ", text or "")
    return [" ".join(span.split()) for span in EXPRESSION_SPAN.findall(operators(cleaned))
            if _BINARY.search(span) and span.count("(") == span.count(")")]


def sole_expression(text: str) -> str | None:
    """The text's expression when it states exactly one and writes no other number or operator outside it, else None:
    what a calculator's expression parameter is to take ("Multiply 12.5 by 4 and then subtract 7." -> "12.5 * 4 - 7";
    the model had written "12.5*4 = 7.5", which the calculator refused).

    >>> sole_expression("Multiply 12.5 by 4 and then subtract 7."), sole_expression("Solve x^2 + 3x = 0")
    ('12.5 * 4 - 7', None)
    >>> sole_expression("add 2 + 3, then 4 * 5"), sole_expression("What is 7 times 13 minus 4?")
    (None, '7 * 13 - 4')
    """
    spans = expression_spans(text)
    if len(spans) != 1:
        return None
    written = " ".join(operators(_NOT_ARITHMETIC.sub(" ", text or "")).split())
    rest = written.replace(spans[0], " ", 1) if spans[0] in written else written
    return None if re.search(r"[\d+*/^=%]|(?<=\w)\s*-\s*(?=\w)", rest) else spans[0]


def stated_expression(text: str) -> str | None:
    """The first expression the text states (`expression_spans`), else None."""
    return next(iter(expression_spans(text)), None)


def is_expression_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    """A string parameter that takes an arithmetic expression (named expression, formula, equation; not a regular
    expression)."""
    text = str(schema.get("description", "")).lower()
    named = set(split_identifier(str(name)).split())
    return schema.get("type") in ("string", None) and "enum" not in schema and bool(EXPRESSION_NAME & named) \
        and "regular expression" not in text and "regex" not in text


def _takes_only(schema: Mapping[str, Any], kind: Callable[[str, Mapping[str, Any]], bool]) -> bool:
    """Whether every required input of a tool (every input, when none is required) is a parameter of `kind`."""
    props = schema.get("properties") or {}
    if not isinstance(props, Mapping):
        return False
    required = [name for name in schema.get("required") or [] if name in props]
    needed = required or list(props)
    return bool(needed) and all(isinstance(props[n], Mapping) and kind(n, props[n]) for n in needed)


def takes_only_expression(schema: Mapping[str, Any]) -> bool:
    """A tool whose required inputs are expressions and nothing else (a calculator): stating an expression is all
    it needs."""
    return _takes_only(schema, is_expression_parameter)


# a SQL statement written out, keywords in capitals as SQL is written ("Select all rows from …" is a request, not SQL):
# what kind of statement it is
_SQL = re.compile(r"\bSELECT\b[^.?!]*?\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b"
                  r"|\b(?:CREATE|DROP|ALTER)\s+TABLE\b")
SQL_NAME = frozenset(("query", "sql", "statement"))
# a statement's kind by its first keyword
_SQL_KINDS = {"read": ("SELECT",), "write": ("INSERT", "UPDATE", "DELETE"), "schema": ("CREATE", "DROP", "ALTER")}
# where a written-out statement ends: a semicolon, or a full stop / question mark / exclamation mark before a space or
# the end (not the point of "3.5" or "notes.id")
_SQL_END = re.compile(r";|[.?!](?=\s|$)")


def sql_statements(text: str) -> list[str]:
    """Each SQL statement the text writes out (`stated_sql`), from its keyword to where its sentence ends.

    >>> sql_statements("Run this SQL: DELETE FROM notes WHERE id = 3. Then thanks!")
    ['DELETE FROM notes WHERE id = 3']
    >>> sql_statements("Execute SELECT a FROM t WHERE p > 3.5; and SELECT b FROM u")
    ['SELECT a FROM t WHERE p > 3.5', 'SELECT b FROM u']
    """
    out, text = [], text or ""
    for found in _SQL.finditer(text):
        if out and found.start() < out[-1][1]:
            continue  # inside the statement before
        end = _SQL_END.search(text, found.end())
        stop = end.start() if end else len(text)
        out.append((text[found.start():stop].strip(), stop))
    return [statement for statement, _ in out]


def stated_sql(text: str) -> str | None:
    """The kind of the first SQL statement the text writes out: "read" (SELECT), "write" (INSERT, UPDATE, DELETE) or
    "schema" (CREATE / DROP / ALTER TABLE); None when it writes none.

    >>> stated_sql("Execute the query SELECT title FROM notes."), stated_sql("Run this SQL: DELETE FROM notes WHERE id = 3.")
    ('read', 'write')
    >>> stated_sql("CREATE TABLE t (a TEXT)"), stated_sql("Select all rows from the notes table."), stated_sql("Hi")
    ('schema', None, None)
    """
    found = _SQL.search(text or "")
    if found is None:
        return None
    keyword = found.group(0).split()[0]
    return next(kind for kind, keywords in _SQL_KINDS.items() if keyword in keywords)


# a statement asked for in words, about a named table ("How many books are in the books table?", "Insert a book … into
# the books table"): the gate's cross-encoder reads "rows" and "SELECT query" as unrelated and ranked read_query 4th-10th
_TABLE = (r"(?:\b(?!(?:a|an|the|this|that|each|every|new)\b)([\w-]+)\s+table\b"
          r"|\btable\s+(?!(?:of|with|for|in|to|from|named|called)\b)([\w-]+))")
# rows of a kind kept in the database, the table not named ("Show me every note in the database.", "Add a note to the
# database"): a statement too (list_tables had been picked); not "What is in the database?" nor its tables
_ROWS_IN_DB = (r"(?<![\w'])(?!(?:is|are|was|were|what|which|who|anything|everything|something|stuff|data|there|it|"
               r"tables?|columns?)\b)([a-z]{3,})\s+(?:(?:are|is)\s+)?(?:(?:stored|kept|saved)\s+)?(?:in|from|into|to)\s+"
               r"(?:the|my|our|this)\s+(?:database|db)\b")
# rows or records to, in or from a bare name ("Add a row to notes with title 'Dentist' …", held-out set 58 had called
# add_observations): a row is a table's, so the name is the table; a file (an extension), folder, graph or list is not
_ROW_OF = (r"\b(?:rows?|records?)\s+(?:to|into|in|from|of)\s+(?:the\s+)?(?!(?:the|my|our|a|an|it|this|"
           r"that|file|folder|directory|document|graph|memory|knowledge|list|database|db|spreadsheet|sheet)\b)"
           r"([A-Za-z_][\w-]*)\b(?!\.\w|[\w-])")
# the verbs that ask for a statement that writes, and the statement each asks for (`grammars.sql_pattern` too)
WRITE_VERBS = {"insert": "INSERT INTO", "add": "INSERT INTO", "put": "INSERT INTO", "delete": "DELETE FROM",
               "remove": "DELETE FROM", "update": "UPDATE", "change": "UPDATE", "set": "UPDATE"}
# an order may open with the table it is about: "In the notes table, add a note titled 'Dentist' …" (held-out set 77)
IN_TABLE = r"in\s+(?:the\s+|my\s+)?[\w-]+\s+table\s*,?\s*"
_WRITE_START = rf"^\W*(?:please\s+)?(?:{'|'.join(WRITE_VERBS)})\b"
_WRITE_WORDS = re.compile(rf"{_WRITE_START}.*(?:{_TABLE}|{_ROWS_IN_DB}|{_ROW_OF})"
                          rf"|^\W*{IN_TABLE}(?:please\s+)?(?:{'|'.join(WRITE_VERBS)})\b", re.I)
# "Insert a note … into notes.": SQL's own INSERT INTO, the table a bare name ending the request (held-out set 57 had
# written the note to a file); a file (an extension) or a folder, document or graph is no table
_INTO_NAME = (r"\binto\s+(?:the\s+|my\s+|our\s+)?(?!(?:a|an|it|this|that|file|folder|directory|document|graph|memory|"
              r"knowledge|list)\b)([A-Za-z_][\w-]*)(?:\s+table)?\s*[.!?]?\s*$")
_INSERT_INTO = re.compile(rf"^\W*(?:please\s+)?insert\b.*{_INTO_NAME}", re.I)
_READ_START = (r"^\W*(?:(?:can|could|would)\s+you\s+)?(?:please\s+)?(?:how\s+many|count|list|show|get|fetch|find|"
               r"select|give\s+me|tell\s+me|what|which|who|pull|grab|retrieve|return|display|print|dump|read|"
               r"look\s+up|query)\b")
_READ_WORDS = re.compile(rf"{_READ_START}.*(?:{_TABLE}|{_ROWS_IN_DB}|{_ROW_OF})", re.I)
# a request about something else that a table's name can also mean: a file (an extension), folder, repository or the
# knowledge graph ("Add a note to notes.txt", "Search my knowledge graph for notes about Alice")
_ELSEWHERE = re.compile(r"\w\.[A-Za-z]\w{0,4}\b|\b(?:files?|folders?|director(?:y|ies)|graph|knowledge|memory|repo|"
                        r"repository|commits?|branch(?:es)?|entit(?:y|ies)|observations?|relations?)\b", re.I)
# what a table is made of, not its rows: "What does the notes table look like?" (held-out set 63 had read its rows)
_ABOUT_SCHEMA = re.compile(r"\b(columns?|schema|structure|fields?|describe|definition|tables|create|drop|rename|"
                           r"layout)\b|\btables?\s+looks?\s+like\b", re.I)


def bare_table(text: str, tables: Collection[str] = ()) -> str | None:
    """The table of `tables` (those the registry's servers hold, `Tool.tables`) a request names by its rows alone, in
    the singular or the plural ("Show all notes whose title mentions Alice", "Delete note 3": notes); None when it names
    none, or also names a file, folder, repository or the knowledge graph, which the word may mean instead.

    >>> [bare_table(t, ("notes",)) for t in ("Show all notes whose title mentions Alice", "Delete note 3",
    ...     "Add a note to notes.txt", "Search my knowledge graph for notes about Alice", "Show my notes")]
    ['notes', 'notes', None, None, 'notes']
    >>> bare_table("Show all notes", ()), bare_table("Show all denotes", ("notes",))
    (None, None)
    """
    text = text or ""
    if not tables or _ELSEWHERE.search(text):
        return None
    return next((table for table, pattern in _table_patterns(tuple(tables)) if pattern.search(text)), None)


@functools.lru_cache(maxsize=8)
def _table_patterns(tables: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each table's name in the singular and the plural, compiled once per set of tables (`Registry.tables` changes
    only with the registry), not on every turn."""
    def forms(table: str) -> set[str]:
        return {table, table[:-1]} if table.lower().endswith("s") and len(table) > 2 else {table, table + "s"}
    return tuple((table, re.compile(rf"(?<![\w./-])(?:{'|'.join(re.escape(f) for f in forms(table))})(?![\w-])", re.I))
                 for table in tables)


def sql_in_words(text: str, tables: Collection[str] = ()) -> str | None:
    """The kind of statement a request asks for in words about a named table: "write" (insert / add / delete / remove /
    update … a table), "read" (how many / list / show / what … a table); None for a question about a table's columns or
    the tables themselves, for a new table, and for a request that names no table.

    >>> sql_in_words("How many books are in the books table?"), sql_in_words("Delete the note with id 2 from the notes table.")
    ('read', 'write')
    >>> sql_in_words("Pull the first five rows from the notes table."), sql_in_words("Read the notes table")
    ('read', 'read')
    >>> sql_in_words("What columns does the books table have?"), sql_in_words("Which tables are in the database?")
    (None, None)
    >>> sql_in_words("What does the notes table look like?"), sql_in_words("What does the notes table hold?")
    (None, 'read')
    >>> sql_in_words("Create a table named tasks."), sql_in_words("What is a table?"), sql_in_words("Book a table for 2")
    (None, None, None)
    >>> [sql_in_words(t) for t in ("Show me every note in the database.", "How many notes are in the database?",
    ...     "Add a note to my database saying hi", "What is in the database?", "What's in my database?", "List the db files")]
    ['read', 'read', 'write', None, None, None]
    >>> [sql_in_words(t) for t in ("Insert a note titled 'Gym' into notes.", "Insert a row into the tasks table",
    ...     "Insert 'hello' into notes.txt", "Insert a line into the file", "Insert Bob into my knowledge graph")]
    ['write', 'write', None, None, None]

    With the tables the registry's servers hold, rows named by their table alone (`bare_table`):

    >>> [sql_in_words(t, ("notes",)) for t in ("Show all notes whose title mentions Alice", "Delete note 3",
    ...     "How many notes are there?", "Note that Alice speaks French", "Add a note to notes.txt")]
    ['read', 'write', 'read', None, None]
    """
    text = text or ""
    if _ABOUT_SCHEMA.search(text):
        return None
    if _WRITE_WORDS.search(text) or _INSERT_INTO.search(text):
        return "write"
    if _READ_WORDS.search(text):
        return "read"
    if bare_table(text, tables) is None:
        return None
    return "write" if re.search(_WRITE_START, text, re.I) else "read" if re.search(_READ_START, text, re.I) else None


def named_table(text: str, tables: Collection[str] = ()) -> str | None:
    """The table a request names ("the books table", "table notes"; of `tables`, those the registry's servers hold,
    also by its rows alone: `bare_table`), else None.

    >>> named_table("Delete the note with id 2 from the notes table."), named_table("Book a table for 2")
    ('notes', None)
    >>> named_table("Insert a note titled 'Gym' into notes."), named_table("Insert 'hi' into notes.txt")
    ('notes', None)
    >>> named_table("Delete note 3", ("notes",)), named_table("Delete note 3")
    ('notes', None)
    """
    match = re.search(_TABLE, text or "", re.I)
    if match:
        return match.group(1) or match.group(2)
    into = _INSERT_INTO.search(text or "") or re.search(_ROW_OF, text or "", re.I)
    return into.group(1) if into else bare_table(text, tables)


def rows_table(text: str) -> str | None:
    """The table of the rows a request asks for in the database without naming a table, as the plural of their kind
    ("every note in the database": notes), else None.

    >>> rows_table("How many notes are in the database?"), rows_table("Show me every note in the database."), rows_table("Hi")
    ('notes', 'notes', None)
    """
    match = re.search(_ROWS_IN_DB, text or "", re.I)
    if match is None:
        return None
    kind = match.group(1).lower()
    return kind if kind.endswith("s") else kind + "s"


def asked_sql(text: str, tables: Collection[str] = ()) -> str | None:
    """The kind of SQL statement a request writes out (`stated_sql`) or asks for in words (`sql_in_words`)."""
    return stated_sql(text) or sql_in_words(text, tables)


def stated_path_list(text: str) -> list[str]:
    """The paths of a turn that lists two or more of them as one list ("Read notes.txt and todo.txt", "a.md, b.md and
    c.md") and nothing else; [] when it writes fewer, or writes one apart ("Move a.txt to b.txt") or sends the list
    somewhere ("Copy a.txt and b.txt to the backup folder": a move or copy, not a read of both).

    >>> stated_path_list("Read both notes.txt and todo.txt."), stated_path_list("Show ab.md, plan.md & /srv/c.md please")
    (['notes.txt', 'todo.txt'], ['ab.md', 'plan.md', '/srv/c.md'])
    >>> stated_path_list("Move ab.txt to cd.txt"), stated_path_list("Copy ab.txt and cd.txt into archive"), stated_path_list("Read ab.txt")
    ([], [], [])
    """
    found = list(PATHS.finditer(text or ""))
    if len(found) < 2:
        return []
    between = [text[a.end():b.start()] for a, b in zip(found, found[1:])]
    if not all(_LIST_JOINER.fullmatch(gap) for gap in between) or _SENT_ON.search(text[found[-1].end():]):
        return []
    return [m.group(0) for m in found]


def is_path_list_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    """An array of strings that are paths: named paths / files / file paths ("paths", "file_list" is not)."""
    items = schema.get("items")
    words = set(split_identifier(str(name)).split())
    return schema.get("type") == "array" and isinstance(items, Mapping) and items.get("type") in ("string", None) \
        and bool(words & {"paths", "path", "files", "filenames", "filepaths"})


def takes_only_path_list(schema: Mapping[str, Any]) -> bool:
    """A tool whose required input is a list of paths and nothing else (`read_multiple_files`)."""
    return _takes_only(schema, is_path_list_parameter)


def is_sql_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    """A string parameter that takes a SQL statement: named query / sql / statement, its name or description saying SQL."""
    words = set(split_identifier(str(name)).split())
    said = f"{name} {schema.get('description', '')}".lower()
    return schema.get("type") in ("string", None) and "enum" not in schema and bool(SQL_NAME & words) and "sql" in said


def takes_only_sql(schema: Mapping[str, Any]) -> bool:
    """A tool whose required inputs are SQL statements and nothing else (a database server's query tools)."""
    return _takes_only(schema, is_sql_parameter)


def runs_sql(description: str, schema: Mapping[str, Any], kind: str) -> bool:
    """Whether a tool that takes only SQL runs statements of `kind`: its description or its parameters' name the
    statement (in capitals, as SQL is written); one that names no statement at all runs any."""
    if not takes_only_sql(schema):
        return False
    props = schema.get("properties") or {}
    text = " ".join([description, *(str(p.get("description", "")) for p in props.values() if isinstance(p, Mapping))])
    named = {k for k, words in _SQL_KINDS.items() if any(re.search(rf"\b{w}\b", text) for w in words)}
    return kind in named or not named


# the verb a tool's name carries, and what a request's opening verb asks done (the same, and verbs only a request
# uses): removing against creating
# (reading too: a name that reads against a request that writes, or removes, or adds; "write" is no tool verb here:
# a `write_query` runs any statement, and a `write_file` may be what a request to save asks for)
_DOES = {**dict.fromkeys("remove delete erase drop purge unlink destroy".split(), "remove"),
         **dict.fromkeys("create add insert append new make".split(), "create"),
         **dict.fromkeys("read get show list view describe search find open".split(), "read")}
_ASKS = {**_DOES, **dict.fromkeys("forget discard".split(), "remove"),
         **dict.fromkeys("record note remember register store stage".split(), "create"),
         **dict.fromkeys("save write put".split(), "write"),
         **dict.fromkeys("display print".split(), "read")}
_OPENING = re.compile(r"^\W*(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:go\s+ahead\s+and\s+)?([a-z]+)", re.I)


def _asked(request: str) -> str | None:
    """What the request's opening verb asks done (remove, create, write, read), or None."""
    opening = _OPENING.match(request or "")
    return _ASKS.get(opening.group(1).lower()) if opening else None


def contrary(request: str, name: str) -> bool:
    """The request opens by asking to remove something and the tool's name says it creates, or the other way round, or
    one asks to read and the other to change: "Remove Acme from the knowledge graph." had called `create_entities`,
    whose name the model read as "entities"; "Save 'call the plumber' in a file named reminders.txt." `read_file`.

    >>> contrary("Remove Acme from the knowledge graph.", "create_entities"), contrary("Please add Bob.", "delete_entities")
    (True, True)
    >>> contrary("Remove Acme from the knowledge graph.", "delete_entities"), contrary("Show Acme", "open_nodes")
    (False, False)
    >>> contrary("Delete the book 'Dune' from the books table.", "write_query")  # "write" runs any statement
    False
    >>> contrary("Save 'call the plumber' in reminders.txt.", "read_file"), contrary("Save it in a.txt", "write_file")
    (True, False)
    >>> contrary("Show me notes.txt.", "read_text_file"), contrary("Show the staged changes.", "git_add")
    (False, True)
    >>> contrary("Stage notes.txt.", "read_text_file"), contrary("Stage notes.txt.", "git_add")  # staging adds to the index
    (True, False)
    """
    asked = _asked(request)
    if asked is None:
        return False
    does = {_DOES.get(w.lower()) for w in split_identifier(name).split()} - {None}
    return bool(does) and asked not in does


def _stem(word: str) -> str:
    """A word without its plural ending, the same way on both sides ("branches" / "branch", "entities" / "entity")."""
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


_FILLERS = frozenset("a an the my our your its this that these those all every".split())
_SAME = {"folder": "directory", "dir": "directory"}  # one word for one thing, on both sides ("the folder tree")


def spells_name(request: str, name: str) -> bool:
    """The request says the tool's name: its words in order, with at most articles and possessives between them ("Show
    the directory tree of my workspace." and `directory_tree`, which the model had passed over for `list_directory`).

    >>> spells_name("Show the directory tree of my workspace.", "directory_tree"), spells_name("List my git branches", "git_branch")
    (True, True)
    >>> spells_name("Show the directory tree of my workspace.", "list_directory"), spells_name("Delete the entities", "delete_relations")
    (False, False)
    >>> spells_name("List the tables", "list_tables"), spells_name("List all the titles in the books table.", "list_tables")
    (True, False)
    >>> spells_name("Show me the folder tree of the workspace.", "directory_tree")  # a folder is a directory
    True
    """
    words = [_SAME.get(w, w) for w in (_stem(w) for w in re.findall(r"[a-z0-9]+", (request or "").lower()))]
    parts = [_SAME.get(w, w) for w in (_stem(w) for w in split_identifier(name).lower().split())]
    for start in (i for i, w in enumerate(words) if parts and w == parts[0]):
        at, pos = 1, start + 1
        while at < len(parts) and pos < len(words) and (words[pos] == parts[at] or words[pos] in _FILLERS):
            at, pos = at + (words[pos] == parts[at]), pos + 1
        if at == len(parts):
            return True
    return False


@functools.lru_cache(maxsize=64)
def server_prefix(names: tuple[str, ...]) -> str:
    """The first name word every tool of one server shares (`git` for git_status, git_log, git_create_branch, ...), or
    "" where they share none or the server has fewer than three tools (a tuple: remembered, as a server's tools are
    the same from turn to turn). A user names the tool without it: "Create a
    branch called feature-search." says `git_create_branch` (the model had picked `create_entities`, set 82).

    >>> server_prefix(("git_status", "git_log", "git_create_branch")), server_prefix(("read_file", "write_file", "list_directory"))
    ('git', '')
    >>> server_prefix(("git_status", "git_log"))
    ''
    """
    firsts = {(split_identifier(n).split() or [""])[0] for n in names}
    return firsts.pop() if len(names) >= 3 and len(firsts) == 1 else ""


def spells_unprefixed(request: str, name: str, prefix: str) -> bool:
    """`spells_name` for the name without its server's prefix (`server_prefix`), where two words or more are left.

    >>> spells_unprefixed("Create a branch called feature-search.", "git_create_branch", "git")
    True
    >>> spells_unprefixed("Show me the status.", "git_status", "git"), spells_unprefixed("Create a branch", "create_branch", "")
    (False, False)
    """
    words = split_identifier(name).split()
    if not prefix or len(words) < 3 or words[0] != prefix:
        return False
    return spells_name(request, "_".join(words[1:]))


# a tool that lists a folder ("Get a detailed listing of all files and directories", "a recursive tree view of files")
LISTS_FOLDERS = re.compile(r"\b(?:list|listing|tree)\b.*\b(?:director(?:y|ies)|folders?)\b", re.I)
_FOLDER_CONTENTS = re.compile(r"\b(?:what'?s|what\s+is|what\s+are|anything|contents?\s+of|files?)\s+(?:are\s+|is\s+)?"
                              r"(?:inside|in|of)?\s*(?:the|my|our)\s+[\w-]+\s+(?:folder|directory|dir)\b"
                              # an order to list a folder itself ("List my workspace." had been told NO_TOOL at 0.98)
                              r"|^\W*(?:please\s+)?(?:list|show(?:\s+me)?|display)\s+(?:the\s+contents\s+of\s+)?"
                              r"(?:my|the|our|this)\s+(?:[\w-]+\s+)?(?:workspace|folder|directory|dir)\W*$", re.I)  # and no more


def asks_folder_contents(request: str) -> bool:
    """Whether the request asks what a folder it names holds ("Show me what's inside the repo folder.", "List the
    contents of the repo folder."): a tool that lists a folder (`LISTS_FOLDERS`) goes first in the pick, where the
    folder's name had drawn `git_branch` and `git_diff_unstaged`.

    >>> [asks_folder_contents(t) for t in ("Show me what's inside the repo folder.", "List the contents of the repo folder.",
    ...     "Which files are in my docs directory?", "Move notes.txt into the repo folder.", "Show the git log of the repo")]
    [True, True, True, False, False]
    >>> [asks_folder_contents(t) for t in ("List my workspace.", "Show me the current directory", "Show the folder tree.")]
    [True, True, False]
    """
    return bool(_FOLDER_CONTENTS.search(request or ""))


def asks_file_edit(request: str) -> bool:
    """Whether the request states a replacement in a file it writes ("Change Shopping to Groceries in list.md."): a
    tool with an old / new text pair takes it (`replacements.takes_replacement`); the gate had told it NO_TOOL.

    >>> asks_file_edit("Change Shopping to Groceries in list.md."), asks_file_edit("Change 100 USD to EUR")
    (True, False)
    """
    from nexus.llm.replacements import request_replacement  # (nexus.llm imports this module)

    return bool(PATHS.search(request or "")) and request_replacement(request) is not None


def joins_name_word(request: str, name: str) -> bool:
    """The request writes a word of the tool's name as two ("Check out the main branch." and `git_checkout`, which the
    model had passed over for `git_branch`): a phrasal verb the name spells as one word.

    >>> joins_name_word("Check out the main branch.", "git_checkout"), joins_name_word("Check the branch out", "git_checkout")
    (True, False)
    >>> joins_name_word("Show the git log", "git_log"), joins_name_word("Log out of the site", "logout_user")
    (False, True)
    """
    words = re.findall(r"[a-z0-9]+", (request or "").lower())
    joined = {a + b for a, b in zip(words, words[1:])}
    return any(len(part) >= 5 and part in joined for part in split_identifier(name).lower().split())


def asks_change(request: str) -> bool:
    """The request opens by asking to create, record, write or remove something ("Note in the knowledge graph that Acme
    is based in Denver.", "Save … in reminders.txt", "Remove Acme …"), not to be told something.

    >>> asks_change("Note in my knowledge graph that Acme is based in Denver."), asks_change("Please delete notes.txt")
    (True, True)
    >>> asks_change("Show me notes.txt."), asks_change("Who is Alice?"), asks_change("Rename a.txt to b.txt")
    (False, False, False)
    """
    return _asked(request) in ("create", "write", "remove")


_NEGATED = re.compile(r"\b(?:not|never|\w+n't)\s+(?:yet\s+|been\s+|ever\s+)*([a-z]+)", re.I)
_NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b", re.I)  # any negation at all


def negated(request: str, names: Sequence[str]) -> list[bool]:
    """Per name: the request says a word with "not" ("isn't staged", "haven't staged") that the name carries, while
    another listed name carries its "un-" form: "What did I change that isn't staged?" had called `git_diff_staged`
    beside `git_diff_unstaged`.

    >>> names = ["git_diff_staged", "git_diff_unstaged"]
    >>> negated("What did I change that isn't staged?", names), negated("Show staged changes", names)
    ([True, False], [False, False])
    """
    said = {w.lower() for w in _NEGATED.findall(request or "")}
    parts = _name_words(names)
    return [any(w in own and _beside(parts, i, "un" + w) for w in said) for i, own in enumerate(parts)]


def contradicted(request: str, names: Sequence[str]) -> list[bool]:
    """The other way round, per name: it carries the "un-" form of a word the request says, beside a listed name with
    the word itself, in a request with no negation and without the "un-" form ("Show the changes I've already staged."
    had called `git_diff_unstaged` three times against the gate's order). The pick holds such a tool far behind.

    >>> names = ["git_diff_staged", "git_diff_unstaged"]
    >>> contradicted("Show the changes I've already staged.", names), contradicted("What haven't I staged?", names)
    ([False, True], [False, False])
    >>> contradicted("Show staged and unstaged changes", names), contradicted("Show the diff", names)
    ([False, False], [False, False])
    """
    if _NEGATION.search(request or ""):
        return [False] * len(names)
    said = {w.lower() for w in re.findall(r"[A-Za-z]+", request or "")}
    parts = _name_words(names)
    return [any(p.startswith("un") and p[2:] in said and p not in said and _beside(parts, i, p[2:]) for p in own)
            for i, own in enumerate(parts)]


def _name_words(names: Sequence[str]) -> list[set[str]]:
    return [set(split_identifier(name).lower().split()) for name in names]


def _beside(parts: Sequence[set[str]], i: int, word: str) -> bool:
    """Whether a listed name other than the i-th has `word`."""
    return any(word in other for j, other in enumerate(parts) if j != i)


@dataclass(frozen=True)
class TurnEvidence:
    """What a turn states that a tool may take whole, read once per turn: an arithmetic expression, the kind of SQL it
    asks for, a list of paths, a question about what the assistant keeps, a fact for it to keep or something named for
    it to forget (`nexus.gate.memory`), a question about what a folder holds."""

    expression: bool = False
    sql: str | None = None
    paths: bool = False
    memory: bool = False
    keep: bool = False
    forget: bool = False
    folder: bool = False
    edit: bool = False

    @classmethod
    def of(cls, turn: str, tables: Collection[str] = ()) -> "TurnEvidence":
        """`tables`: those the registry's servers hold (`Registry.tables`), so rows named by their table alone count."""
        return cls(stated_expression(turn) is not None, asked_sql(turn, tables), bool(stated_path_list(turn)), asks_memory(turn),
                   asks_to_keep(turn), asks_to_forget(turn), asks_folder_contents(turn), asks_file_edit(turn))

    def __bool__(self) -> bool:
        return self.expression or self.sql is not None or self.paths or self.memory or self.keep or self.forget or \
            self.folder or self.edit

    @property
    def brings_tools(self) -> bool:
        """Whether `joins` can accept any tool: the evidence that adds tools the lookup missed."""
        return self.sql is not None or self.memory or self.keep or self.forget or self.folder

    def joins(self, description: str, schema: Mapping[str, Any]) -> bool:
        """A tool the evidence adds to the candidates when the lookup found none like it: one that runs the SQL asked
        for, or reads the assistant's memory for a question about it, or adds to it for a fact to keep, or lists a
        folder for a question about what a folder holds (a calculator
        or a many-files reader the lookup finds by itself)."""
        return (self.sql is not None and runs_sql(description, schema, self.sql)) or (self.memory and keeps_memory(description)) \
            or (self.keep and adds_to_memory(description)) or (self.forget and removes_from_memory(description)) \
            or (self.folder and bool(LISTS_FOLDERS.search(description or "")))

    def fits(self, description: str, schema: Mapping[str, Any]) -> bool:
        """A tool that takes what the turn states: it leads the shortlist and overrules a NO_TOOL."""
        from nexus.llm.replacements import takes_replacement

        return self.joins(description, schema) or (self.expression and takes_only_expression(schema)) \
            or (self.paths and takes_only_path_list(schema)) or (self.edit and takes_replacement(schema))
