"""Dates in the layout a parameter's description spells out ("in the format 'MM/DD/YYYY'").

`nexus.llm.formats` handles `YYYY-MM-DD`; registries also ask for `MM/DD/YYYY`, `DD-MM-YYYY` and the like, and a
small model copies "May 15th" instead. The layout is read from the description only; a date is written in it
when its year is known (from the value or from the request), never with a guessed year.

>>> schema = {"type": "string", "description": "Check-in date, in the format 'MM/DD/YYYY'."}
>>> date_layout(schema), to_layout("May 15th", "%m/%d/%Y", "from May 15th to May 22nd, 2023")
('%m/%d/%Y', '05/15/2023')
>>> to_layout("March 13th", "%m/%d/%Y", "on March 13th")  # no year anywhere: left as it is
'March 13th'
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Mapping

LAYOUT = re.compile(r"\b(MM|DD)([/.-])(MM|DD)\2(YYYY)\b|\b(YYYY)([/.])(MM)\6(DD)\b", re.I)
_CODES = {"mm": "%m", "dd": "%d", "yyyy": "%Y"}


def date_layout(schema: Mapping[str, Any]) -> str | None:
    """The `strftime` layout a string parameter's description asks for (other than `YYYY-MM-DD`), else None."""
    if schema.get("type") not in ("string", None) or "enum" in schema:
        return None
    match = LAYOUT.search(str(schema.get("description", "")))
    if not match:
        return None
    parts = [p for p in match.groups() if p]
    if len({p.lower() for p in parts if p.isalpha()}) != 3:  # "MM/MM/YYYY" is no layout
        return None
    sep = parts[1]
    return sep.join(_CODES[p.lower()] for p in parts if p.isalpha())


def _parse(value: str, layout: str) -> date | None:
    from nexus.llm.formats import to_iso_date

    try:
        return datetime.strptime(value.strip(), layout).date()
    except ValueError:
        pass
    iso = to_iso_date(value, today=date(1, 1, 1))  # year 1 marks "no year in the value"
    return date.fromisoformat(iso) if iso else None


def to_layout(value: str, layout: str, request: str) -> str:
    """`value` as a date in `layout`; a value without a year takes the year of the request's same date."""
    from nexus.llm.stated import request_full_dates

    day = _parse(value, layout)
    if day is None:
        return value
    if day.year == 1:
        same = [d for d in request_full_dates(request) if d[5:] == f"{day.month:02d}-{day.day:02d}"]
        if not same:
            return value
        day = date.fromisoformat(same[0])
    return day.strftime(layout)


def request_dates_in(layout: str, request: str) -> list[str]:
    """The request's dates with a known year, in `layout` (what a required parameter may take)."""
    from nexus.llm.stated import request_full_dates

    return [date.fromisoformat(d).strftime(layout) for d in request_full_dates(request)]
