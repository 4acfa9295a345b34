"""Values the request ties to one parameter: a choice of it the request names, a number or an identifier written
next to a word of its name.

A 270M base model picks the first enum value it sees ("svi" for "the Ethernet interface"), a stated number that
belongs to another parameter (`number_of_adults: 9` from "9am ... two adults") or garbage for an id ("id is
1234" → `":{"`). What the request says right next to the parameter's own words is a better guide; the grammar
then offers only those values (`nexus.llm.grammars.grammar_schema`). Each rule reads only the schema and the
request, never a tool's name.

>>> stated_choices({"type": "string", "enum": ["svi", "ethernet", "loopback"]}, "status of the Ethernet interface")
['ethernet']
>>> anchored_numbers("number_of_adults", "9am tickets for two adults"), anchored_numbers("nodeId", "node 1200, pod 3")
([2.0], [1200.0])
>>> anchored_ids("websiteId", 'Rename website "Frank" to "Bob". Web ID is 1234')
['1234']
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nexus.llm.choices import schema_choices
from nexus.llm.parameters import NAME_FILLER
from nexus.llm.stated import NUMBER_WORDS, SCALES, THOUSANDS_COMMA, request_coordinates
from nexus.llm.words import words
from nexus.slb.lexical import STOPWORDS

# Words between a parameter's word and its value: "equity of $10", "id is 1234", "id: 3".
LINKS = frozenset("of is was are be equals equal".split())
_TOKEN = re.compile(r"[A-Za-z0-9][\w.-]*[A-Za-z0-9]%?|[A-Za-z0-9]%?")
ID_WORDS = frozenset(("id", "ids", "identifier", "uuid", "number", "no", "num", "code"))
KEY_WORDS = frozenset(("id", "ids", "identifier", "uuid", "code"))  # name words that say "the value follows me"
MIN_LISTED = 2  # quoted examples in a description count as a list of choices from this many ("'a' or 'b'")


def _same_word(a: str, b: str) -> bool:
    """Two words for the same thing: one is the other's start, minus a plural s ("adults"/"adult",
    "beds"/"bedroom", "pod"/"pods"), the shorter at least three letters; short words only when equal ("id")."""
    a, b = (w[:-1] if len(w) > 3 and w.endswith("s") else w for w in (a, b))
    short, long = sorted((a, b), key=len)
    return len(short) >= 3 and long.startswith(short) or a == b


def stated_choices(schema: Mapping[str, Any], request: str, min_listed: int = MIN_LISTED) -> list[str]:
    """The choices of a string parameter the request names as words (its enum, or a list of at least `min_listed`
    quoted examples in its description), in schema order; [] when it names none.

    >>> stated_choices({"type": "string", "description": "One of 'breakfast', 'lunch', 'dinner' or 'snack'"}, "as a snack")
    ['snack']
    """
    listed = isinstance(schema.get("enum"), list) or len(schema_choices(schema)) >= min_listed
    if not listed or schema.get("type") not in ("string", None):
        return []
    text = f" {' '.join(words(request))} "
    return [c for c in dict.fromkeys(schema_choices(schema)) if words(c) and f" {' '.join(words(c))} " in text]


def _own_words(name: str) -> list[str]:
    """The words that tell this parameter apart; "id" only when there is no other ("nodeId" is "node")."""
    own = [w for w in words(name) if len(w) >= 3 and w not in NAME_FILLER and w not in KEY_WORDS]
    return own or [w for w in words(name) if w in KEY_WORDS]


def _request_tokens(request: str) -> tuple[list[str], list[bool]]:
    """The request's words and numbers, lower case, thousands separators dropped ("$2,000,000" -> "2000000"), and
    for each whether only spaces part it from the next ("15000] discounted": not)."""
    text = THOUSANDS_COMMA.sub("", request or "")
    matches = list(_TOKEN.finditer(text))
    spaced = [not text[m.end():n.start()].strip() for m, n in zip(matches, matches[1:])] + [False]
    return [m.group(0).lower() for m in matches], spaced


def _number(token: str) -> float | None:
    if token in NUMBER_WORDS:
        return float(NUMBER_WORDS[token])
    try:
        return float(token)
    except ValueError:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)[a-z]+", token)  # "50km", "3rd" (units glued to the number)
        return float(match.group(1)) if match else None


def _neighbours(tokens: list[str], spaced: list[bool], i: int, width: int = 1) -> list[str]:
    """The words that name what the number at i (`width` tokens: "100 million") is: the word before a linking word
    ("equity of 10", "id is 1234"), else the next word ("two adults") or the word before it. After a link the next
    word names something else: in "income of 2,000,000, shareholder's equity of 10,000,000" the first number is
    not the equity."""
    if i >= 2 and tokens[i - 1] in LINKS:
        return [tokens[i - 2]]
    after = tokens[i + width:i + width + 1] if spaced[i + width - 1] else []
    return after + tokens[max(0, i - 1):i]


def anchored_numbers(name: str, request: str) -> list[float]:
    """The numbers the request writes right next to a word of the parameter's name, in request order ("8%" as 8
    and 0.08, "100 million" as 100000000).

    >>> anchored_numbers("shareholder_equity", "net income of $2,000,000 and shareholder's equity of $10,000,000")
    [10000000.0]
    >>> anchored_numbers("number_of_beds", "a 2-bedroom, 1-bathroom flat"), anchored_numbers("amount", "5 mountains")
    ([2.0], [])
    """
    own = _own_words(name)
    tokens, spaced = _request_tokens(request)
    found: list[float] = []
    for i, token in enumerate(tokens):
        parts = token.split("-") if "-" in token else [token]
        number = _number(parts[0].rstrip("%"))
        if number is None:
            continue
        scale = SCALES.get(tokens[i + 1], 1.0) if i + 1 < len(tokens) else 1.0
        near = parts[1:2] + _neighbours(tokens, spaced, i, 2 if scale != 1.0 else 1)  # "2-bedroom": the glued word first
        if any(_same_word(w, n.rstrip("%")) for w in own for n in near):
            # "8%" may be 8 or 0.08: the schema decides (`nexus.llm.stated.wants_fraction`)
            percent = token.endswith("%") or tokens[i + 1:i + 2] == ["percent"]
            values = (number, number / 100) if percent else (number * scale,)
            found += [v for v in values if v not in found]
    return found + [v for v in coordinates(name, request) if v not in found]


_AXES = {"lat": "NS", "latitude": "NS", "lon": "EW", "lng": "EW", "long": "EW", "longitude": "EW"}


def coordinates(name: str, request: str) -> list[float]:
    """For a latitude or longitude parameter (by its name), the coordinates the request writes with a hemisphere
    of its axis ("37.8651 N, 119.5383 W": latitude 37.8651, longitude -119.5383); south and west are negative.

    >>> coordinates("longitude", "at 37.8651 N, 119.5383 W"), coordinates("lat", "33°S 151°E"), coordinates("x", "1.5 N")
    ([-119.5383], [-33.0], [])
    """
    axes = {_AXES[w] for w in words(name) if w in _AXES}
    if len(axes) != 1:
        return []
    axis = axes.pop()
    return [number for number, side in request_coordinates(request) if side in axis]


def anchored_ids(name: str, request: str) -> list[str]:
    """For an identifier parameter (its name ends in id, number or code), the tokens with a digit the request
    writes right after one of its name's words ("Web ID is 1234", "id:3", "customer 5521").

    >>> anchored_ids("user_id", "projects of Adriel, id:3"), anchored_ids("city", "city 12")
    (['3'], [])
    """
    parts = words(name)
    if not parts or parts[-1] not in ID_WORDS:
        return []
    own = set(_own_words(name)) | {parts[-1]}
    raw = [t.rstrip("%") for t in _TOKEN.findall(request or "")]
    tokens = [t.lower() for t in raw]
    found: list[str] = []
    for i, token in enumerate(tokens):
        if not any(c.isdigit() for c in token) or i == 0:
            continue
        before = tokens[i - 2] if tokens[i - 1] in LINKS and i >= 2 else tokens[i - 1]
        if any(_same_word(w, before) or w == before for w in own) and raw[i] not in found:
            found.append(raw[i])
    return found


# words that stand between "the" and a noun without naming the thing ("the new branch", "the current table")
NOT_NAMES = frozenset("new current same other existing default remote local latest last first next previous whole "
                      "entire active old each every any all this that my our your their its".split()) | STOPWORDS


def anchored_names(name: str, request: str) -> list[str]:
    """For a name parameter (`<noun>_name`, such as `branch_name`), the one word the request puts between "the" and
    that noun ("Switch the repo to the master branch." -> "master"). Left free, the 270M model had written the
    request's repository path as git_checkout's branch.

    Only a single word directly after "the" counts ("the Los Angeles Lakers team" names no one word), not one that only
    qualifies the noun (`NOT_NAMES`). A capital "The" inside a sentence is part of the name. The noun written with a
    capital, or followed by "of" or a quote, says the name goes on past it ("the Metropolitan Museum of Art"): no value.

    >>> anchored_names("branch_name", "Switch /ws/repo to the master branch."), anchored_names("branch_name", "the new branch")
    (['master'], [])
    >>> anchored_names("name", "the master branch"), anchored_names("hotel_name", "a room at The Plaza hotel")
    ([], ['The Plaza'])
    """
    parts = words(name)
    if len(parts) < 2 or parts[-1] != "name":
        return []
    text = request or ""
    found: list[str] = []
    # "the" (1), the one word (2), the noun (3), then "of" or a quote (4) when the name goes on past the noun
    pattern = rf"\b(the)\s+([A-Za-z0-9][\w.-]*)\s+({re.escape(parts[-2])}s?)\b(\s+of\b|\s*['\"‘“])?"
    for match in re.finditer(pattern, text, re.I):
        value = match.group(2).rstrip(".")
        if value.lower() in NOT_NAMES or match.group(4) or match.group(3)[0].isupper():
            continue
        if match.group(1) == "The" and text[: match.start()].rstrip()[-1:] not in ("", ".", "!", "?"):
            value = f"The {value}"
        if value not in found:
            found.append(value)
    return found


def anchored_strings(name: str, request: str) -> list[str]:
    """The values a string parameter takes from the words next to its own: an identifier after it (`anchored_ids`),
    else the one word between "the" and its noun (`anchored_names`)."""
    return anchored_ids(name, request) or anchored_names(name, request)


_SEPARATORS = re.compile(r"[,;\n]|\b(?:and|or)\b", re.I)


def max_list_items(request: str) -> int:
    """At most how many items a list copied from the request has: its separators (commas, semicolons, line
    breaks, "and", "or") plus one. A small model that starts a list repeats its items until the token cap cuts the call off.

    >>> max_list_items("the S&P 500 and the Dow Jones"), max_list_items("cash flows [-500, 100, 150]")
    (2, 3)
    >>> max_list_items("objects:\\nRed logo.\\nGreen logo.\\nBlack logo.")
    4
    """
    return len(_SEPARATORS.findall(request or "")) + 1


def quoted_after(name: str, request: str) -> bool:
    """Whether the request quotes a value right after the parameter's name ("with the message 'Fix typo'": git_commit's
    `message`), the name's words in order, a linking word ("is", ":") allowed between.

    >>> quoted_after("message", "Commit the staged changes with the message 'Fix typo'."), quoted_after("message", "Commit it")
    (True, False)
    >>> quoted_after("branch_name", 'Create a branch name "dev"'), quoted_after("title", "titled 'Dune'")
    (True, False)
    """
    parts = words(name)
    if not parts:
        return False
    said = r"\s+".join(re.escape(p) + "s?" for p in parts)
    return bool(re.search(rf"\b{said}\b\s*(?:(?:is|was|of|=|:)\s*)?['\"‘“]", request or "", re.I))
