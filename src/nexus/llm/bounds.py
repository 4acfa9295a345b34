"""Time bounds a request puts on what a tool lists: "since 2026-01-01" starts the span, "before June 5th 2026" ends
it, "from the last 2 weeks" starts it "2 weeks ago".

A tool that lists things over time takes them as a pair of optional parameters (mcp-server-git's git_log:
`start_timestamp` / `end_timestamp`, which accept ISO dates and git's relative dates). Left free, the small model
wrote "since 2026-01-01" into `end_timestamp`, "since yesterday" into nothing, and "the last 2 weeks" as
`max_count: 2` (probe, session 41). Here each bound parameter gets the value the request states for its own end;
the grammar then offers only that value, and leaves the other end out (`nexus.llm.grammars.grammar_schema`).

>>> stated_bounds("Show the commits since 2026-01-01"), stated_bounds("Which commits are from the last 2 weeks?")
({'start': '2026-01-01'}, {'start': '2 weeks ago'})
>>> stated_bounds("commits after yesterday and before June 5th 2026"), stated_bounds("Block 9pm to 7am")
({'start': 'yesterday', 'end': '2026-06-05'}, {})
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.llm.stated import DATE_SPANS, NUMBER_WORDS, request_full_dates
from nexus.llm.words import words

_STARTS = frozenset("start since after from begin beginning earliest".split())
_ENDS = frozenset("end until till before to latest".split())
_TIME_WORDS = frozenset("timestamp date datetime time since until after before day".split())
_TIME_TEXT = re.compile(r"\b(?:date|timestamp|time|dates)\b", re.I)
_LAYOUT = re.compile(r"yyyy|\bmm/dd|\bdd/mm", re.I)
_RELATIVE = re.compile(r"\brelative\b", re.I)

_UNIT = r"(minute|hour|day|week|month|year)s?"
_AMOUNT = rf"(\d+|{'|'.join(sorted(NUMBER_WORDS, key=len, reverse=True))}|an?)"
_AGO = re.compile(rf"\b{_AMOUNT}\s+{_UNIT}\s+ago\b", re.I)
_LAST = re.compile(rf"\b(?:the\s+)?(?:last|past)\s+(?:{_AMOUNT}\s+)?{_UNIT}\b", re.I)
_NAMED_DAY = re.compile(r"\b(?:yesterday|today)\b", re.I)
_START_CUE = re.compile(r"\b(?:since|after|from|starting(?:\s+(?:from|on))?)\s+", re.I)
_END_CUE = re.compile(r"\b(?:until|till|before|up\s+to)\s+", re.I)
# "in the last 2 weeks", "over the past month": a span that starts then and runs to now
_PERIOD = re.compile(rf"\b(?:in|from|over|during|within|for)\s+(?:the\s+)?(?:last|past)\s+(?:{_AMOUNT}\s+)?{_UNIT}\b", re.I)


def bound(name: str, schema: Mapping[str, Any]) -> str | None:
    """"start" or "end" for an optional string parameter that bounds a span of time by its name (`start_timestamp`,
    `until`, `end_date`) and talks about dates or times; None otherwise (an enum, a number, `destination`)."""
    types = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf") or [] if isinstance(s, Mapping)}
    if "enum" in schema or "string" not in types and schema.get("type") is not None:
        return None
    parts, text = set(words(name)), str(schema.get("description", ""))
    if not (parts & _TIME_WORDS or _TIME_TEXT.search(text)) or _LAYOUT.search(text) and not _RELATIVE.search(text):
        return None  # a layout to write it in ("YYYY-MM-DD HH:MM:SS"), where "2 weeks ago" would not do
    start, end = bool(parts & _STARTS), bool(parts & _ENDS)
    return "start" if start and not end else "end" if end and not start else None


def _ago(amount: str | None, unit: str) -> str:
    n = 1 if not amount or amount.lower() in ("a", "an") else int(NUMBER_WORDS.get(amount.lower(), amount))
    return f"{n} {unit.lower()}{'s' if n != 1 else ''} ago"


def _value(text: str) -> str | None:
    """The date or relative date `text` opens with: ISO for a full date, "yesterday", "N units ago"."""
    head = " ".join(text.split()[:5])
    for pattern in (_AGO, _LAST):
        match = pattern.match(head)
        if match:
            return _ago(match.group(1), match.group(2))
    match = _NAMED_DAY.match(head)
    if match:
        return match.group(0).lower()
    dates = request_full_dates(re.split(r"\b(?:and|to|until|before|but)\b", head, maxsplit=1)[0])
    return dates[0] if len(dates) == 1 else None


def stated_bounds(request: str) -> dict[str, str]:
    """{"start": value, "end": value} for each end of a span of time the request states (after its cue word, or a
    period up to now); an end stated twice, or two ways, is left out."""
    found: dict[str, set[str]] = {"start": set(), "end": set()}
    for end, cue in (("start", _START_CUE), ("end", _END_CUE)):
        for match in cue.finditer(request or ""):
            value = _value(request[match.end():])
            if value:
                found[end].add(value)
    for match in _PERIOD.finditer(request or ""):
        found["start"].add(_ago(match.group(1), match.group(2)))
    return {end: next(iter(values)) for end, values in found.items() if len(values) == 1}


def bound_phrases(request: str) -> str:
    """The request with its periods and dates taken out ("from the last 2 weeks", "2026-01-01"): what is left is what
    a count parameter may read (the 2 is no number of commits)."""
    return DATE_SPANS.sub(" ", _LAST.sub(" ", _AGO.sub(" ", request or "")))
