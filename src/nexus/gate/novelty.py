"""Evidence that a request introduces something new by name ("a person named Dave", "Marie, a scientist,", "Bob … as a
person"), against a tool whose description says it works on existing things only.

Why the pick needs it: on the demo's memory server "Add a person named Dave to the knowledge graph." and "Add Marie, a
scientist, to my knowledge graph." went to `add_observations` ("Add new observations to existing entities in the
knowledge graph") on 6 of 7 such requests in sets 6-32, where `create_entities` ("Create multiple new entities") was
listed beside it: both names read as adding. The request's own words say the thing is new: it is introduced with an
indefinite article and a kind. So a listed tool whose description says "existing" goes behind one that does not
(`ToolCaller._grounded`). Descriptions only, never names.

>>> [introduces_new(t) for t in ("Add a person named Dave to the knowledge graph.", "Add Marie, a scientist, to my graph.",
...     "Add a new person called Frank.", "Add Bob to my knowledge graph as a person.", "Create a user called Ann",
...     "Remember that Carol is a software engineer.", "Remember that Dave is my dentist.",
...     "Store a new person, Grace, who is a pilot.")]
[True, True, True, True, True, True, True, True]
>>> [introduces_new(t) for t in ("Add that Alice likes tennis.", "Add a new observation to Alice.",
...     "Note that Acme, the rocket maker, moved.", "Rename the file to a.txt", "Add 2 and 3, a classic.",
...     "Remember that Carol is a designer at Acme.")]
[False, False, False, False, False, False]
>>> acts_on_existing("Add new observations to existing entities in the knowledge graph"), acts_on_existing("Create entities")
(True, False)
"""

from __future__ import annotations

import re

_KIND = r"(?:new\s+)?[a-z]+(?:\s+[a-z]+)?"
_NAME = r"[A-Z][\w'-]*"
_INTRODUCED = re.compile(
    rf"\b(?:a|an)\s+{_KIND}\s+(?:named|called)\s+{_NAME}"      # "a person named Dave", "a new person called Frank"
    rf"|\b{_NAME},\s+(?:a|an)\s+{_KIND}\s*,"                   # "Marie, a scientist,"
    rf"|\b(?:a|an)\s+{_KIND},\s+{_NAME}\s*(?:,|$)"             # "a new person, Grace, who is a pilot"
    rf"|\b{_NAME}\b.*\bas\s+(?:a|an)\s+(?:new\s+)?[a-z]+\W*$"   # "Add Bob to my knowledge graph as a person."
    rf"|\bthat\s+{_NAME}\s+is\s+(?:a|an|my|our)\s+{_KIND}\W*$",  # "Remember that Carol is a software engineer.", "… is my dentist"
)
_EXISTING = re.compile(r"\b(?:already\s+)?existing\b", re.I)


def introduces_new(request: str) -> bool:
    """Whether the request introduces a thing by name with an indefinite article and a kind."""
    return bool(_INTRODUCED.search(request or ""))


def acts_on_existing(description: str) -> bool:
    """Whether a tool's description says it works on existing things."""
    return bool(_EXISTING.search(description or ""))
