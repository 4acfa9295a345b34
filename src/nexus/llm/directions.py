"""Which of two stated values goes to the source parameter and which to the target: "from Euro to Dollar" gives
`from_currency` EUR and `to_currency` USD, "20000 Japanese Yen in US Dollars" `base_currency` JPY.

The grammar offers a required currency, zone, time, date or path parameter only the values of that kind the request
states (`nexus.llm.grammars._stated_choices`); a pair such as from/to then gets the same two values each, and the
small model often writes them the wrong way round (dev: `from_currency: USD` for "from Euro to Dollar"). Here each
side of a pair is narrowed to the one value the request places after its cue word: "from" for the source, "to" /
"into" (else "in") for the target, each read up to the other cue. Nothing is narrowed unless the request places
exactly one of the two values on a side.

>>> from nexus.llm.currencies import request_currencies
>>> stated = {"from_currency": ["EUR", "USD"], "to_currency": ["EUR", "USD"]}
>>> directed(stated, "the rate from Euro to Dollar", lambda name, text: request_currencies(text))
{'from_currency': ['EUR'], 'to_currency': ['USD']}
>>> directed({"base_currency": ["JPY", "USD"], "target_currency": ["JPY", "USD"]},
...          "How much will 20000 Japanese Yen be in United States Dollar?", lambda name, text: request_currencies(text))
{'base_currency': ['JPY'], 'target_currency': ['USD']}
>>> from nexus.llm.values import request_zones
>>> directed({"source_timezone": ["America/Chicago", "Europe/Berlin"], "target_timezone": ["America/Chicago", "Europe/Berlin"]},
...          "If it's 2:30pm in Chicago, what time is it in Berlin?", lambda name, text: request_zones(text))
{'source_timezone': ['America/Chicago'], 'target_timezone': ['Europe/Berlin']}
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from nexus.llm.values import words

SOURCE = frozenset("from source src base origin start departure depart input sell".split())
TARGET = frozenset("to target dest destination end arrival arrive output into quote buy".split())
_FROM = re.compile(r"\bfrom\b", re.I)
_TO = (re.compile(r"\b(?:to|into)\b", re.I), re.compile(r"\bin\b", re.I))


def direction(name: str) -> str | None:
    """"source" or "target" when a parameter's name says which end it is (`from_currency`, `targetTimezone`)."""
    parts = set(words(name))
    is_source, is_target = bool(parts & SOURCE), bool(parts & TARGET)
    return "source" if is_source and not is_target else "target" if is_target and not is_source else None


def _sides(request: str) -> tuple[str | None, str | None]:
    """The request's text after its "from" cue and after its "to" cue (the first after "from" when there is one: "I
    want to convert it from EUR to USD"), each up to the other cue when it follows."""
    source = _FROM.search(request)
    target = None
    for pattern in _TO:
        matches = list(pattern.finditer(request))
        later = [m for m in matches if source is not None and m.start() > source.start()]
        target = (later or matches or [None])[0]
        if target is not None:
            break
    if source is None:
        return None, request[target.end():] if target else None
    if target is None:
        return request[source.end():], None
    if source.start() < target.start():
        return request[source.end():target.start()], request[target.end():]
    return request[source.end():], request[target.end():source.start()]


_QUANTITY = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\d[\d,.]*", re.I)


def _after_quantity(request: str) -> str | None:
    """The few words right after the request's first clock time or amount ("2:30pm in Chicago", "100 USD"): the
    value stated there is what the time or amount is given in, so it is the source when the cues place nothing."""
    match = _QUANTITY.search(request)
    return " ".join(request[match.end():].split()[:3]) if match else None


def _stated_on(text: str | None, values: Sequence[str], choices_in: Callable[[str], Sequence[str]]) -> list[str]:
    """Which of `values` one side of the request states (none for a side without its cue), each looked up once."""
    if text is None:
        return []
    found = set(choices_in(text))
    return [v for v in values if v in found]


def directed(stated: Mapping[str, Sequence[str]], request: str,
             choices_in: Callable[[str, str], Sequence[str]]) -> dict[str, list[str]]:
    """For each source/target pair of parameters offered the same two values, the one value each side gets
    (`choices_in(name, text)`: the values of that parameter's kind the text states); pairs the request does not
    place are left out."""
    out: dict[str, list[str]] = {}
    ends = {name: direction(name) for name in stated}
    sides = _sides(request)
    for source in (n for n, end in ends.items() if end == "source"):
        values = list(stated[source])
        target = next((n for n, end in ends.items() if end == "target" and list(stated[n]) == values and n not in out), None)
        if target is None or len(values) != 2:
            continue
        on_source, on_target = (_stated_on(text, values, lambda t: choices_in(source, t)) for text in sides)
        by_source = on_source[0] if len(on_source) == 1 else None
        by_target = next(v for v in values if v != on_target[0]) if len(on_target) == 1 else None  # the other one
        if by_source and by_target and by_source != by_target:
            continue  # the two sides disagree: leave both values to the model
        placed = by_source or by_target
        if placed is None:  # "If it's 2:30pm in Chicago, what time is it in Berlin?": Chicago is the source
            near = _stated_on(_after_quantity(request), values, lambda t: choices_in(source, t))
            placed = near[0] if len(near) == 1 else None
        if placed is not None:
            out[source], out[target] = [placed], [next(v for v in values if v != placed)]
    return out


def _placed(values: Sequence[str], request: str, choices_in: Callable[[str], Sequence[str]]) -> tuple[str | None, str | None]:
    """(source, target): the one value of `values` the request puts after its "from" cue, and after its "to" cue."""
    on = [_stated_on(text, values, choices_in) for text in _sides(request)]
    return tuple(found[0] if len(found) == 1 else None for found in on)  # type: ignore[return-value]


def directed_follow_up(stated: Mapping[str, Sequence[str]], request: str, context: str,
                       choices_in: Callable[[str, str], Sequence[str]]) -> dict[str, list[str]]:
    """For a follow-up, each source/target pair gets the side its own cue places and the other side from the request
    it leans on: "What about to Sydney?" after "Convert 10:00 from Paris time to New York time" is Paris to Sydney.

    >>> from nexus.llm.values import request_zones
    >>> zones = ["Australia/Sydney", "Europe/Paris", "America/New_York"]
    >>> directed_follow_up({"source_timezone": zones, "target_timezone": zones}, "What about to Sydney?",
    ...                    "Convert 10:00 from Paris time to New York time", lambda name, text: request_zones(text))
    {'source_timezone': ['Europe/Paris'], 'target_timezone': ['Australia/Sydney']}
    """
    out: dict[str, list[str]] = {}
    ends = {name: direction(name) for name in stated}
    for source in (n for n, end in ends.items() if end == "source"):
        values = list(stated[source])
        target = next((n for n, end in ends.items() if end == "target" and list(stated[n]) == values and n not in out), None)
        if target is None or len(values) < 2:
            continue
        now = _placed(values, request, lambda t: choices_in(source, t))
        before = _placed(values, context, lambda t: choices_in(source, t))
        if now == (None, None):
            continue  # the turn moves neither end: leave the values to the model
        src, dst = now[0] or before[0], now[1] or before[1]
        if src and dst and src != dst:
            out[source], out[target] = [src], [dst]
    return out

