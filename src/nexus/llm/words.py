"""The words and quoted spans of a request, and a value cut short of the word or quote it copies.

Pure standard library; the other value modules (`formats`, `stated`, `parameters`, `values`) read requests through
these.

>>> words("notesFile v2.txt"), quoted_spans("Write 'hello world' to `a.txt`")
(['notes', 'file', 'v2', 'txt'], ['hello world', 'a.txt'])
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", str(text)).lower())


def prefix_stem(word: str) -> str:
    return word[:5]


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
