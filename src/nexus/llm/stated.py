"""What a request states: its dates, clock times, time zones, paths and numbers, and whether it states a value.

A small model fills optional parameters nobody asked for with plausible values; `stated` is the test that keeps
only those the request gives. Each rule reads only the schema and the request, never a tool's name.

>>> sorted(request_times("call at 5:30pm")), request_zones("3pm London time"), stated("city", "Paris", "in Paris")
(['17:30'], ['Europe/London'], True)
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Mapping

from nexus.llm.choices import closed_choices
from nexus.llm.formats import is_zone_parameter, to_hh_mm, to_iso_date, to_zone, value_format
from nexus.llm.layouts import date_layout, request_dates_in
from nexus.llm.words import prefix_stem, words

# a thousands separator: a comma between digits with exactly three after it ("$10,000"; not "2,3,4")
THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# digits with thousands separators only where every group after a comma has three digits ("10,000"); other commas
# part numbers ("sides 2,3,4" are three numbers, not 234)
# a number in digits, not one inside a word, a decimal's tail or a commit counted back from HEAD ("HEAD~1", "HEAD^2":
# the probe's "diff between master and HEAD~1" had sent git_diff context_lines 1)
_NUMBER = re.compile(r"(?<![\w.])(?<!HEAD[~^])-?(?:\d{1,3}(?:,\d{3})+(?!,?\d)|\d+)(?:\.\d+)?")
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())} | {"thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000,
                                            "single": 1, "double": 2, "twice": 2, "once": 1, "couple": 2, "dozen": 12,
                                            "half": 0.5, "quarter": 0.25}
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
DATE_SPANS = re.compile(
    rf"\b\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}\b|\b{_MONTH}\s+{_DAY}\b(?:,?\s*\d{{4}}\b)?"
    rf"|\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s*\d{{4}}\b)?", re.I)
TIME_SPANS = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|in the (?:morning|afternoon|evening))|\b\d{1,2}:\d{2}\b"
                        r"|\bnoon\b|\bmidnight\b", re.I)
NUMERIC_DATE = re.compile(r"\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\b\d{4}[./-]\d{1,2}[./-]\d{1,2}\b")
YEAR = re.compile(r"\b(?:1[5-9]|20)\d\d\b")


# -- is a value stated in the request? --------------------------------------------------------------
def request_dates(request: str) -> set[str]:
    """The dates the request states: `YYYY-MM-DD` for those with a year, `MM-DD` for those without.

    >>> sorted(request_dates("from April 1 to April 30th 2023, or 2024.1.5"))
    ['04-01', '2023-04-30', '2024-01-05']
    """
    found = set()
    for span in DATE_SPANS.findall(request or ""):
        iso = to_iso_date(span, today=date(2000, 1, 1))
        if iso:
            found.add(iso if YEAR.search(span) else iso[5:])
    return found


def request_full_dates(request: str) -> list[str]:
    """The request's dates as `YYYY-MM-DD`; a date without a year takes the year of the others when they state
    one year ("April 3rd to April 5th 2023"); [] when a year is missing and cannot be told.

    >>> request_full_dates("from April 3rd to April 5th 2023"), request_full_dates("on March 7th")
    (['2023-04-03', '2023-04-05'], [])
    """
    found = request_dates(request)
    years = {d[:4] for d in found if len(d) == 10}
    if any(len(d) == 5 for d in found) and len(years) != 1:
        return []
    return sorted(d if len(d) == 10 else f"{next(iter(years))}-{d}" for d in found)


def request_times(request: str) -> set[str]:
    """The clock times the request states, as 24-hour `HH:MM`."""
    return {t for span in TIME_SPANS.findall(request or "") if (t := to_hh_mm(span))}


_PLACE = re.compile(r"\b[A-Z][A-Za-z]+/[A-Za-z_/+-]+|\b[A-Z][A-Za-z.'-]*(?:[ _][A-Z][A-Za-z.'-]*){0,2}")
_PATH = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"`]+|(?<![\w/])(?:[A-Za-z]:|~|\.{1,2})?/?(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,5}(?![\w/])"
                   r"|(?<![\w.:])(?:[A-Za-z]:|~|\.{1,2})?/[\w./-]+")
PATH_NAME = re.compile(r"(^|_)(path|file|filename|dir|directory|folder)s?$", re.I)


def request_zones(request: str) -> list[str]:
    """The IANA zones of the places, zone names and abbreviations the request writes with a capital (a city, a
    country, "PST", "Europe/Paris"), in the order it names them; lower-case words are left out ("wake", "easter"
    and "davis" are zone cities too).

    >>> request_zones("Convert 3pm London time to Tokyo time"), request_zones("what time is it in UTC?")
    (['Europe/London', 'Asia/Tokyo'], ['UTC'])
    >>> request_zones("Nice. What time is it in Cape Town?"), request_zones("Split it. Is it late in Nice?")
    (['Africa/Johannesburg'], ['Europe/Paris'])
    """
    found: list[str] = []
    for match in _PLACE.finditer(request or ""):
        parts = match.group(0).split()
        # a capital that opens a sentence says nothing: "Split the bill" is no trip to Croatia (geonames' cities only
        # for words capitalised inside a sentence)
        before = request[:match.start()].rstrip()
        opens = not before or before[-1] in ".!?"
        # the longest run of capitalised words that names a zone: "New York", then "York"
        for i in range(len(parts)):
            zone = next((z for j in range(len(parts), i, -1)
                         if (z := to_zone(" ".join(parts[i:j]), cities=not (opens and i == 0)))), None)
            if zone and zone not in found:
                found.append(zone)
                break
    return found


def request_paths(request: str) -> list[str]:
    """File and folder paths the request writes: with a slash, or a file name with an extension ("notes.txt").

    >>> request_paths("Read notes.txt and /tmp/a/b.csv, version 2.5 please")
    ['notes.txt', '/tmp/a/b.csv']
    """
    found = (p.rstrip(".,;:!?)") for p in _PATH.findall(request or ""))
    return [p for p in dict.fromkeys(found) if p and not re.fullmatch(r"[\d.]+", p)]


def file_paths(request: str) -> list[str]:
    """The paths the request writes that are plainly files or folders: with a slash, or a name of two letters or more
    with an extension of two or more ("notes.txt", not "a.m" or "D.C").

    >>> file_paths("Rename notes.txt to notes-old.txt at 9 a.m. in Washington D.C.")
    ['notes.txt', 'notes-old.txt']
    """
    return [p for p in request_paths(request) if "/" in p or re.fullmatch(r"[\w-]{2,}(?:\.[\w-]+)*\.[A-Za-z0-9]{2,5}", p)]


_TEXT_SAID = re.compile(r"\bthe\s+(?:text|words)\s+(?!['\"`])", re.I)
_TEXT_END = re.compile(r"\s+(?:into|to|in)\s+(?:an?\s+|the\s+|my\s+)?(?:new\s+)?(?:file\b|[\w./-]+\.[A-Za-z0-9]{2,5}\b)|[.!?](?=\s+(?-i:[A-Z]))|[.!?]?\s*$", re.I)
TEXT_PARAMETER = re.compile(r"content|text|body", re.I)  # a parameter that holds what a file or record says


def unquoted_text(request: str) -> str | None:
    """The text a request gives unquoted after "the text" or "the words", up to the file it goes into or the
    sentence's end; None when it quotes it (the quotes say it then), gives none, or the span holds a path or more
    than twelve words.

    >>> unquoted_text("Write the text see you soon into a new file bye.txt."), unquoted_text("Create a.txt with the text learn rust.")
    ('see you soon', 'learn rust')
    >>> unquoted_text("Create a.txt with the text call Ann. Then list my files.")  # up to the sentence's end
    'call Ann'
    >>> unquoted_text("Save the text 'hi' to a.txt"), unquoted_text("Display the text of notes.txt.")
    (None, None)
    """
    said = _TEXT_SAID.search(request or "")
    if not said or re.match(r"(?:of|from|in|at|on)\b", request[said.end():], re.I):
        return None
    rest = request[said.end():]
    span = rest[:_TEXT_END.search(rest).start()].strip()
    if not span or request_paths(span) or len(span.split()) > 12 or re.search(r"['\"`]", span):
        return None
    return span


_CREATE = re.compile(r"\b(create|make|new|add|write|save|mkdir)\b", re.I)
# the name after "called", "named", "titled", or after a shell verb ("mkdir backups in my workspace" had made ".")
_NAMED = re.compile(r"(?:\b(?:called|named|titled)|^\W*(?:mkdir|touch))\s+[\"'`]?(\w(?:[\w.-]*\w)?(?:/\w(?:[\w.-]*\w)?)*)",
                    re.I)  # "archive/2026" whole


def request_path_choices(request: str) -> list[str]:
    """What a path parameter may take: a folder the request writes joined with a name it gives ("a directory called
    archive in /data" -> "/data/archive"), then the paths it writes as they are; a request that creates something
    gets only the joined path for that folder.

    >>> request_path_choices("Make a directory called archive in /data/work"), request_path_choices("Read /a/b.txt")
    (['/data/work/archive'], ['/a/b.txt'])
    >>> request_path_choices("Find files named report in /data/work")
    ['/data/work/report', '/data/work']

    A request that writes no path but names what it creates gets that name as a relative path, which a server
    resolves against its own root (the MCP filesystem server does): "Create a folder named reports in the
    workspace" had got a path copied from the prompt's examples, outside the server's allowed directories.

    >>> request_path_choices("Create a folder named reports in the workspace.")
    ['reports']
    """
    paths = request_paths(request)
    names = [n for n in _NAMED.findall(request or "") if n not in paths]
    if not paths and names and _CREATE.search(request):
        return list(dict.fromkeys(names))
    folders = [p for p in paths if not re.search(r"\.[A-Za-z0-9]{1,5}$", p)]
    joined = [f"{p.rstrip('/')}/{n}" for p in folders for n in names]
    if joined and _CREATE.search(request):  # a new thing in a folder is not the folder itself
        paths = [p for p in paths if p not in folders]
    return list(dict.fromkeys(joined + paths))


_FOLDER_SAID = re.compile(r"\b(?:folder|directory|dir|workspace)\b", re.I)
NAMED_FOLDER = re.compile(r"\b(?:the|my|our)\s+([\w-]+)\s+(?:folder|directory|dir)\b|\b(?:folder|directory)\s+(?:called|named)\s+[\"'`]?([\w-]+)", re.I)
# words before "folder" that name where one works, not a folder inside it: the server's own root
HERE_WORDS = frozenset("workspace current working home root this main base top project same".split())


def unwritten_folder(request: str) -> list[str]:
    """What a path parameter may take when the request talks about a folder without writing its path: the folder it
    names ("the reports folder" -> "reports", relative, as the server resolves it), else the server's own root (".":
    "the workspace folder", "the current directory"). The model had written "workspace/files" and a path copied from
    the prompt's examples, both outside the server's allowed directories. Empty when the request writes a path or
    names no folder.

    >>> unwritten_folder("What files are in the workspace folder?"), unwritten_folder("List the reports folder")
    (['.'], ['reports'])
    >>> unwritten_folder("Find all .txt files in the workspace."), unwritten_folder("Read /a/b.txt in the workspace")
    (['.'], [])
    >>> unwritten_folder("Analyse the sales data")
    []
    """
    if request_paths(request) or not _FOLDER_SAID.search(request or ""):
        return []
    named = [a or b for a, b in NAMED_FOLDER.findall(request or "")]
    return list(dict.fromkeys(n for n in named if n.lower() not in HERE_WORDS)) or ["."]


def is_path_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    return schema.get("type") in ("string", None) and "enum" not in schema and bool(PATH_NAME.search(name))


SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_AFTER_NUMBER = re.compile(r"\s*(%|percent\b|thousand\b|million\b|billion\b|trillion\b)?", re.I)
# a coordinate with its hemisphere ("37.8651 N, 119.5383 W", "33°S"): south and west are negative
_HEMISPHERE = re.compile(r"(°)?\s*([NSEW])\b")


def _numbers(request: str) -> list[tuple[float, str, str]]:
    """Each number the request writes in digits, with the word that follows it ("%", a scale word or "") and, for a
    coordinate (a decimal or degrees), its hemisphere (N, S, E, W; the number negative for S and W), else ""."""
    out = []
    for match in _NUMBER.finditer(request or ""):
        try:
            number = float(match.group(0).replace(",", ""))
        except ValueError:
            continue
        after = _AFTER_NUMBER.match(request, match.end()).group(1) or ""
        side = _HEMISPHERE.match(request, match.end())
        hemisphere = side.group(2) if side and (side.group(1) or "." in match.group(0)) else ""
        if hemisphere in ("S", "W"):
            number = -abs(number)
        out.append((number, "%" if after in ("%", "percent") else after.lower(), hemisphere))
    return out


def request_coordinates(request: str) -> list[tuple[float, str]]:
    """The coordinates the request writes with a hemisphere, signed, with it.

    >>> request_coordinates("at 37.8651 N, 119.5383 W, 5 S")
    [(37.8651, 'N'), (-119.5383, 'W')]
    """
    return [(number, side) for number, _, side in _numbers(request) if side]


def request_numbers(request: str) -> set[float]:
    """The numbers the request states: digits, number words, "8%" also as 0.08, "213 million" as 213000000.

    >>> sorted(request_numbers("8% of 2.5 million, twice"))
    [0.08, 2.0, 2.5, 8.0, 2500000.0]
    >>> sorted(request_numbers("sides 2,3,4 cost $12,500,000.50")), sorted(request_numbers("1,2345"))
    ([2.0, 3.0, 4.0, 12500000.5], [1.0, 2345.0])
    >>> sorted(request_numbers("at 37.8651 N, 119.5383 W")), sorted(request_numbers("33°S 5 S"))
    ([-119.5383, 37.8651], [-33.0, 5.0])
    """
    found: set[float] = set()
    for number, after, _ in _numbers(request):
        found.add(number)
        if after == "%":
            found.add(number / 100)
        elif after in SCALES:
            found.add(number * SCALES[after])
    found |= {float(NUMBER_WORDS[w]) for w in words(request) if w in NUMBER_WORDS}
    return found


PERCENT_HINT = re.compile(r"percent|%", re.I)
RATE_HINT = re.compile(r"rate|percent|ratio|%", re.I)


def is_rate_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    """A number parameter that takes a rate or a percentage (by its name or description)."""
    return schema.get("type") == "number" and bool(RATE_HINT.search(name) or RATE_HINT.search(str(schema.get("description", ""))))


def percent_only(request: str) -> set[float]:
    """The numbers the request writes only as percentages ("8%": 8, not also written plain)."""
    numbers = _numbers(request)
    return {n for n, after, _ in numbers if after == "%"} - {n for n, after, _ in numbers if after != "%"}


def wants_fraction(schema: Mapping[str, Any]) -> bool:
    """Whether a stated percentage is passed as a fraction (0.08 for 8%): a `number` parameter whose description
    does not ask for a percentage. APIs take rates as fractions unless they say otherwise."""
    return schema.get("type") == "number" and not PERCENT_HINT.search(str(schema.get("description", "")))


_SCOPE_WORDS = frozenset("all any every each everything anything none both".split())


def words_said(value: str, request: str) -> tuple[int, int]:
    """(how many of the value's words of three letters or more the request uses, by their first five letters; how
    many there are).

    >>> words_said("A backup copy", "Move notes.txt into backups")
    (1, 2)
    """
    said = {prefix_stem(w) for w in words(request)}
    own = [w for w in words(value) if len(w) >= 3]
    return sum(prefix_stem(w) in said for w in own), len(own)


def stated(name: str, value: Any, request: str, schema: Mapping[str, Any] | None = None) -> bool:
    """Whether the request gives this value (or, for a flag, mentions the parameter): a string it contains or
    whose words it uses (outside the paths it writes, unless the value is one of them or a path), a number it
    names, a boolean whose parameter it talks about; with the `schema`, a date or time in the schema's format that
    the request states in any spelling ("5:30pm" states `17:30`).

    >>> stated("base_branch", "work/main", "Create a branch x in /work/main/repo"), stated("path", "/work/main/repo", "List /work/main/repo")
    (False, True)
    >>> stated("rating", "4.7", "cleaners at 3 p.m. rated 4.7 or more")  # "p.m." reads as a file name; 4.7 is no path
    True
    """
    if isinstance(value, bool):
        said = {prefix_stem(w) for w in words(request)}
        return any(prefix_stem(w) in said for w in words(name) if len(w) >= 4)
    if isinstance(value, (int, float)):
        return float(value) in request_numbers(request)
    fmt = value_format(schema) if isinstance(value, str) and schema else None
    layout = date_layout(schema) if isinstance(value, str) and schema else None
    if layout:
        return value in request_dates_in(layout, request)
    if fmt == "date":
        dates = request_dates(request)
        return value in dates or value[5:] in dates
    if fmt == "time":
        return value in request_times(request)
    if isinstance(value, str):
        text = " ".join(words(value))
        if not text:
            return False
        if set(text.split()) <= _SCOPE_WORDS and value.strip().lower() not in {
                str(c).lower() for c in [*((schema or {}).get("enum") or []), *closed_choices(schema or {})]}:
            return False  # "List all local branches": "all" says how many, it is no value (git_branch's contains: "all")
        paths = request_paths(request)
        if value.strip() not in paths and not is_path_parameter(name, schema or {}):
            for path in paths:  # a piece of a path the request writes is not a value it states
                request = request.replace(path, " ")
        if f" {text} " in f" {' '.join(words(request))} ":
            return True
        said, own = words_said(value, request)
        return bool(own) and said * 2 >= own
    if isinstance(value, list):
        return any(stated(name, item, request) for item in value)
    return True  # objects: their fields are the model's structure, not a value to look up


def value_kind(name: str, schema: Mapping[str, Any]) -> str | None:
    """The kind of value a string parameter takes from what a request states: "zone", "currency", "layout" (a date
    in the layout its description spells out), "date", "time", "path"; None for any other.

    >>> value_kind("tz", {"type": "string"}), value_kind("day", {"type": "string", "format": "date"}), value_kind("q", {})
    ('zone', 'date', None)
    """
    from nexus.llm.currencies import is_currency_parameter

    if schema.get("type") not in ("string", None):
        return None
    if is_zone_parameter(name, schema):
        return "zone"
    if is_currency_parameter(name, schema):
        return "currency"
    if date_layout(schema):
        return "layout"
    fmt = "date" if schema.get("format") == "date" else value_format(schema)
    if fmt in ("time", "date"):
        return fmt
    return "path" if is_path_parameter(name, schema) else None
