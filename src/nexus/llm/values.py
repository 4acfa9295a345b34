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

import re
from datetime import date
from functools import lru_cache
from typing import Any, Mapping

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
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


def to_zone(value: str) -> str | None:
    """An IANA zone name for a zone, city, abbreviation or country name; None when there is none.

    >>> to_zone("New York"), to_zone("America/Tokyo"), to_zone("pst"), to_zone("Atlantis")
    ('America/New_York', 'Asia/Tokyo', 'America/Los_Angeles', None)
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
    return text if text in names else None  # a legacy name ("GB", "Cuba") with no better match


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
    """
    text = value.strip().lower().replace(".", "")
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
def request_numbers(request: str) -> set[float]:
    found: set[float] = set()
    for token in _NUMBER.findall(request or ""):
        try:
            number = float(token.replace(",", ""))
        except ValueError:
            continue
        found |= {number, number / 100}  # "8%" may be 0.08
    found |= {float(NUMBER_WORDS[w]) for w in words(request) if w in NUMBER_WORDS}
    return found


def stated(name: str, value: Any, request: str) -> bool:
    """Whether the request gives this value (or, for a flag, mentions the parameter): a string it contains or
    whose words it uses, a number it names, a boolean whose parameter it talks about."""
    said = {_stem(w) for w in words(request)}
    if isinstance(value, bool):
        return any(_stem(w) in said for w in words(name) if len(w) >= 4)
    if isinstance(value, (int, float)):
        return float(value) in request_numbers(request)
    if isinstance(value, str):
        text = " ".join(words(value))
        if not text:
            return False
        if f" {text} " in f" {' '.join(words(request))} ":
            return True
        own = [w for w in words(value) if len(w) >= 3]
        return bool(own) and sum(_stem(w) in said for w in own) * 2 >= len(own)
    if isinstance(value, list):
        return any(stated(name, item, request) for item in value)
    return True  # objects: their fields are the model's structure, not a value to look up


# -- the pass over one call's arguments ---------------------------------------------------------------
def normalise_value(name: str, schema: Mapping[str, Any], value: Any) -> Any:
    """One value in the form its schema asks for (zone, date, time, enum spelling); unchanged otherwise."""
    if not isinstance(value, str):
        return value
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        folded = {str(option).lower(): option for option in schema["enum"]}
        return folded.get(value.strip().lower(), value)
    if is_zone_parameter(name, schema):
        return to_zone(value) or value
    fmt = value_format(schema)
    if fmt == "date":
        return to_iso_date(value) or value
    if fmt == "time":
        return to_hh_mm(value) or value
    return value


def normalise_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any], request: str,
                        drop_unstated: bool = True) -> dict[str, Any]:
    """Top-level arguments normalised (`normalise_value`); with `drop_unstated`, optional ones the request does
    not state (`stated`) are left out, so the tool's own defaults apply."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out = {}
    for name, value in arguments.items():
        sub = props.get(name) if isinstance(props.get(name), Mapping) else {}
        value = normalise_value(name, sub, value)
        if drop_unstated and name not in required and not stated(name, value, request):
            continue
        out[name] = value
    return out
