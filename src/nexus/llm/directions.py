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
>>> from nexus.llm.stated import request_zones
>>> directed({"source_timezone": ["America/Chicago", "Europe/Berlin"], "target_timezone": ["America/Chicago", "Europe/Berlin"]},
...          "If it's 2:30pm in Chicago, what time is it in Berlin?", lambda name, text: request_zones(text))
{'source_timezone': ['America/Chicago'], 'target_timezone': ['Europe/Berlin']}
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from nexus.llm.words import words

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


_QUANTITY = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\d[\d,.]*|\b(?:noon|midday|midnight)\b",
                       re.I)


def _after_quantity(request: str) -> str | None:
    """The few words right after the request's first clock time or amount ("2:30pm in Chicago", "noon in Chicago",
    "100 USD"): the value stated there is what the time or amount is given in, so it is the source when the cues
    place nothing."""
    match = _QUANTITY.search(request)
    return " ".join(request[match.end():].split()[:3]) if match else None


def _stated_on(text: str | None, values: Sequence[str], choices_in: Callable[[str], Sequence[str]]) -> list[str]:
    """Which of `values` one side of the request states (none for a side without its cue), each looked up once."""
    if text is None:
        return []
    found = set(choices_in(text))
    return [v for v in values if v in found]


def _placed(values: Sequence[str], request: str, choices_in: Callable[[str], Sequence[str]]) -> tuple[str | None, str | None]:
    """(source, target): the one value of `values` the request puts after its "from" cue, and after its "to" cue."""
    on = [_stated_on(text, values, choices_in) for text in _sides(request)]
    return on[0][0] if len(on[0]) == 1 else None, on[1][0] if len(on[1]) == 1 else None


def directed(stated: Mapping[str, Sequence[str]], request: str, choices_in: Callable[[str, str], Sequence[str]],
             context: str = "") -> dict[str, list[str]]:
    """For each source/target pair of parameters offered the same values, the one value each side gets
    (`choices_in(name, text)`: the values of that parameter's kind the text states); pairs the request does not
    place are left out. With `context`, the request a follow-up leans on, a pair the turn's own cue moves at one end
    takes the other end from the context: "What about to Sydney?" after "Convert 10:00 from Paris time to New York
    time" is Paris to Sydney.

    >>> from nexus.llm.stated import request_zones
    >>> zones = ["Australia/Sydney", "Europe/Paris", "America/New_York"]
    >>> directed({"source_timezone": zones, "target_timezone": zones}, "What about to Sydney?",
    ...          lambda name, text: request_zones(text), "Convert 10:00 from Paris time to New York time")
    {'source_timezone': ['Europe/Paris'], 'target_timezone': ['Australia/Sydney']}
    """
    out: dict[str, list[str]] = {}
    ends = {name: direction(name) for name in stated}
    for source in (n for n, end in ends.items() if end == "source"):
        values = list(stated[source])
        target = next((n for n, end in ends.items() if end == "target" and list(stated[n]) == values and n not in out), None)
        if target is None or len(values) < 2:
            continue
        pick = lambda text, source=source: choices_in(source, text)  # noqa: E731 - one parameter's kind
        on_source, on_target = _placed(values, request, pick)
        if context and (on_source or on_target):  # a follow-up moves one end; the other is the earlier request's
            before = _placed(values, context, pick)
            ends_now = on_source or before[0], on_target or before[1]
            if ends_now[0] and ends_now[1] and ends_now[0] != ends_now[1]:
                out[source], out[target] = [ends_now[0]], [ends_now[1]]
                continue
        if len(values) != 2:
            continue
        by_target = next(v for v in values if v != on_target) if on_target else None  # the other one
        if on_source and by_target and on_source != by_target:
            continue  # the two sides disagree: leave both values to the model
        placed = on_source or by_target
        if placed is None:  # "If it's 2:30pm in Chicago, what time is it in Berlin?": Chicago is the source
            near = _stated_on(_after_quantity(request), values, pick)
            placed = near[0] if len(near) == 1 else None
        if placed is not None:
            out[source], out[target] = [placed], [next(v for v in values if v != placed)]
    return out
