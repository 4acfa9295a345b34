"""What a tool's parameters have room for and require, set against a request: whether the request only asks to
read, which required values it leaves unstated, how many values of a kind it writes and a tool can hold, which
optional parameters and flags it talks about, and what it counts.

>>> room_for({"properties": {"source_timezone": {"type": "string"}, "target_timezone": {"type": "string"}}}, "zone")
2
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from nexus.llm.choices import schema_choices
from nexus.llm.formats import value_format
from nexus.llm.layouts import date_layout
from nexus.llm.stated import NUMBER_WORDS, NUMERIC_DATE, YEAR, request_dates, request_times, request_zones, value_kind
from nexus.llm.words import prefix_stem, quoted_spans, words
from nexus.paths import written_paths
from nexus.slb.lexical import STOPWORDS

# Words of a parameter's name that say nothing about which parameter it is ("include_", "num_", "is_").
NAME_FILLER = frozenset(
    "include includes has have allow allowed enable enabled use with number num type show get filter max min the "
    "for only flag value name ids avg average total count list".split())
NEGATIONS = frozenset("no not non without dont don never exclude excluding excluded nor isn aren doesn".split())


# A question for information ("What changed in the last commit?", "Is there anything to commit?"), or an order to
# show something ("Find entities about Acme"); not a request phrased as a question ("Can you create a branch?")
_QUESTION = re.compile(r"^\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|does|do|did|has|have|had|"
                       r"any|anything)\b"  # "Any uncommitted changes in my repo?" had called git_commit
                       r"[^?]*\?\s*$", re.I)
_SHOW = re.compile(r"^\s*(?:please\s+)?(?:show|list|get|find|search|look\s+up|display|read|tell\s+me|give\s+me|count|"
                   r"fetch)\b", re.I)


def asks_to_read(request: str) -> bool:
    """Whether the request only asks to be told something (a question, or "show / list / find …").

    >>> asks_to_read("Is there anything to commit in my repository?"), asks_to_read("Find entities about Acme.")
    (True, True)
    >>> asks_to_read("Any uncommitted changes in my repo?"), asks_to_read("Anything new in the notes table?")
    (True, True)
    >>> asks_to_read("Can you create a branch called x?"), asks_to_read("Commit my changes."), asks_to_read("Hi? Add x")
    (False, False, False)
    """
    return bool(_QUESTION.match(request or "") or _SHOW.match(request or ""))


# a revision parameter (git_show's `revision`), and how a request states one: a hash, HEAD, a quoted ref, or the
# newest commit ("the latest commit" is HEAD)
_REVISION = re.compile(r"(?i)rev|revision|ref|commit(?:_?(?:id|hash|sha))?|sha")
LATEST_COMMIT = re.compile(r"\b(?:latest|last|most\s+recent|newest|current|head)\s+commit\b", re.I)
# a hash, a commit counted back from HEAD (HEAD~2, HEAD^), or several commits: not HEAD itself ("the HEAD commit" is)
NOT_HEAD = re.compile(r"\b[0-9a-f]{7,40}\b|\bHEAD(?:~\d*|\^+)|\bcommits\b", re.I)
# a ref the request writes: a hash (with a digit: "defaced" is a word), or a commit counted back from HEAD
WRITTEN_REF = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b|\b(?-i:HEAD)(?:~\d+|\^+|\b)", re.I)  # or HEAD itself
# words that place the commit meant relative to the ref written ("the commit before HEAD~1")
RELATIVE_REF = re.compile(r"\b(?:before|after|parent|child|not)\b", re.I)
_STATED_REVISION = re.compile(r"\bHEAD\b|['\"`][^'\"`]+['\"`]|\b(?:tag|branch|version|v\d)", re.I)  # or a commit


def is_revision(name: str, schema: Mapping[str, Any]) -> bool:
    """Whether a parameter takes a revision (a commit hash or ref), by its name."""
    return bool(_REVISION.fullmatch(name)) and schema.get("type") in ("string", None)


def unstated_required(schema: Mapping[str, Any], request: str) -> list[str]:
    """The required parameters that take a time zone, a date, a clock time or a revision when the request states none
    of that kind: a call to this tool would have to invent them ("What time is it in Tokyo?" gives `convert_time` no
    `time`; "Show me the commit history." gives git_show no commit).

    >>> schema = {"type": "object", "required": ["timezone", "time"], "properties": {
    ...     "timezone": {"type": "string", "description": "IANA timezone name"},
    ...     "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"}}}
    >>> unstated_required(schema, "What time is it in Tokyo right now?"), unstated_required(schema, "3pm in Tokyo")
    (['time'], [])
    >>> day = {"type": "object", "required": ["day"], "properties": {"day": {"type": "string", "format": "date"}}}
    >>> unstated_required(day, "book it for 05/12/2023"), unstated_required(day, "book it for tomorrow")
    ([], ['day'])
    >>> show = {"type": "object", "required": ["revision"], "properties": {"revision": {"type": "string"}}}
    >>> unstated_required(show, "Show me the commit history."), unstated_required(show, "What was in the latest commit?")
    (['revision'], [])
    >>> unstated_required(show, "Show commit 3f2a9c1"), unstated_required(show, "Show me who committed last.")
    ([], ['revision'])
    """
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    out = []
    for name in schema.get("required") or []:
        sub = props.get(name)
        if not isinstance(sub, Mapping):
            continue
        kind = value_kind(name, sub)
        if kind == "zone":
            missing = not request_zones(request)
        elif kind in ("date", "layout"):  # any written date counts, also one whose day/month order is unclear ("05/12/2023")
            missing = not request_dates(request) and not NUMERIC_DATE.search(request or "")
        elif kind == "time":
            missing = not request_times(request)
        elif is_revision(name, sub):  # "Show me the commit history." states no commit for git_show(revision)
            missing = not (stated_commit(request or "") or _STATED_REVISION.search(request or ""))
        else:
            continue
        if missing:
            out.append(name)
    return out


def stated_kinds(request: str) -> dict[str, int]:
    """How many values of each kind the request writes that a tool may or may not have room for: clock times (counted
    from one) and time zones (from two: one place is also what most requests about a city name, which many tools
    without a zone parameter serve). Dates are left out: a request often states dates the right tool does not take
    ("check in on 05/10/2023" for a house search), while a distractor that schedules something does.

    >>> stated_kinds("If it is 14:30 in Berlin, what time is it in New York?"), stated_kinds("time in Rome?")
    ({'time': 1, 'zone': 2}, {})
    >>> stated_kinds("Open notes.txt and repo/notes.md at once."), stated_kinds("Read notes.txt.")
    ({'path': 2}, {})
    >>> stated_kinds("What changed in the last commit?"), stated_kinds("What have I changed since my last commit?")
    ({'revision': 1}, {})
    """
    zones = len(set(request_zones(request)))
    paths = len(set(written_paths(request)))
    kinds = {"time": len(request_times(request)), "zone": zones if zones >= 2 else 0, "path": paths if paths >= 2 else 0,
             "revision": int(stated_commit(request))}
    return {kind: n for kind, n in kinds.items() if n}


_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_SINCE = re.compile(r"\bsince\s+(?:the\s+|my\s+|our\s+)?$", re.I)


def stated_commit(request: str) -> bool:
    """Whether the request states one commit: a hash, or the newest commit ("What changed in the last commit?"), not
    as where changes start ("since my last commit" asks about the working tree)."""
    if _HASH.search(request or ""):
        return True
    return any(not _SINCE.search(request[:m.start()]) for m in LATEST_COMMIT.finditer(request or ""))


def room_for(schema: Mapping[str, Any], kind: str, description: str = "") -> int:
    """How many values of `kind` (`value_kind`) a tool has room for: one per parameter of that kind, and `MANY` for a
    list of them (`read_multiple_files(paths)`, `git_add(files)`).

    >>> room_for({"properties": {"time": {"type": "string", "description": "Time in 24-hour format (HH:MM)"}}}, "time")
    1
    >>> room_for({"properties": {"source_timezone": {"type": "string"}, "target_timezone": {"type": "string"}}}, "zone")
    2
    >>> room_for({"properties": {"files": {"type": "array", "items": {"type": "string"}}}}, "path") == MANY
    True
    >>> move = {"properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}
    >>> room_for(move, "path", "Move or rename files and directories."), room_for(move, "path")
    (2, 0)
    """
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    if kind == "revision":
        return sum(is_revision(name, sub) for name, sub in props.items() if isinstance(sub, Mapping))
    if kind == "path":
        return sum(_path_room(name, sub, description) for name, sub in props.items() if isinstance(sub, Mapping))
    return sum(held(name, sub, kind) for name, sub in props.items() if isinstance(sub, Mapping))


MANY = 1000  # a list parameter's room


def held(name: str, schema: Mapping[str, Any], kind: str) -> int:
    """How many values of `kind` one parameter holds: 1 for a value of that kind, `MANY` for a list of them (its
    items read under the list's name: `files`, `paths`), else 0."""
    if value_kind(name, schema) == kind:
        return 1
    items = schema.get("items")
    return MANY if schema.get("type") == "array" and isinstance(items, Mapping) and value_kind(name, items) == kind else 0


_CAPITALISED = re.compile(r"\b[A-Z][\w'-]+")
# what a request ends by asking about, in lower case too ("anything about violin")
_TOPIC = re.compile(r"\b(?:about|mentioning|regarding|concerning)\s+([A-Za-z][\w'-]+)\s*[.?!]*\s*$", re.I)
_NO_TOPIC = frozenset("it this that them these those you yourself me myself us everything anything something all "
                      "what today now".split())
_PRONOUN_I = re.compile(r"I'(m|ve|d|ll)")  # "I've", "I'm": the user, capitalised as a pronoun, not a name


def named_values(request: str, known: str = "") -> list[str]:
    """Names the request gives a tool to work on: capitalised words inside a sentence (not its first word), quoted
    spans and the topic it ends by asking about, less those whose words all occur in `known` (the listed tools' own texts: "SQLite", "Git").

    >>> named_values("Search my knowledge graph for notes about Alice", "read graph: Read the entire knowledge graph")
    ['Alice']
    >>> named_values("Which tables are in the SQLite database?", "list tables: List all tables in the SQLite database")
    []
    >>> named_values("Save the text 'buy milk' for Ann. Thanks"), named_values("Show me the whole graph.")
    (['Ann', 'buy milk'], [])
    >>> named_values("Show me what I've staged for commit."), named_values("What I'm after is Acme's file.")
    ([], ["Acme's"])
    >>> named_values("Look in the knowledge graph for anything about violin."), named_values("Tell me about it.")
    (['violin'], [])
    """
    text = request or ""
    found = []
    for match in _CAPITALISED.finditer(text):
        before = text[:match.start()].rstrip()
        # a sentence's first word is capitalised anyway, and so is the pronoun "I"
        if before and before[-1] not in ".!?:;\"'(`" and not _PRONOUN_I.fullmatch(match.group(0)):
            found.append(match.group(0))
    found += quoted_spans(text)
    topic = _TOPIC.search(text)  # "... for anything about violin." (it had read the whole graph)
    if topic and topic.group(1).lower() not in _NO_TOPIC:
        found.append(topic.group(1))
    known_words = set(words(known))
    return [v for v in dict.fromkeys(found) if words(v) and not set(words(v)) <= known_words]


MOVE_ENDS = re.compile(r"^(source|destination|src|dest|dst|target)(_?(path|file|dir))?$", re.I)  # the two ends of a move
_ABOUT_FILES = re.compile(r"\b(files?|director(y|ies)|folders?|paths?)\b", re.I)


def takes_path(schema: Mapping[str, Any], description: str = "") -> bool:
    """Whether a tool has a parameter for a file or folder path (by its name, or a description that says path): a
    user who names a path wants a tool that works on it ("the last 3 commits of the repository at /srv/app"). With
    the tool's `description`, the source / destination of a tool about files count too (the filesystem server's
    `move_file(source, destination)` says nothing about either; "Move notes.txt into the backups folder." had weighed
    it down as taking no path, and `write_file` was called instead).

    >>> takes_path({"properties": {"owner": {}, "sha": {}}}), takes_path({"properties": {"repo_path": {"type": "string"}}})
    (False, True)
    >>> move = {"properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}
    >>> takes_path(move), takes_path(move, "Move or rename files and directories."), takes_path(move, "Transfer money.")
    (False, True, False)
    >>> takes_path({"properties": {"files": {"type": "array", "items": {"type": "string"}}}})  # git_add: "Stage a.md."
    True
    """
    return room_for(schema, "path", description) > 0


def _path_room(name: str, schema: Mapping[str, Any], description: str) -> int:
    """How many paths one parameter holds (`held`; a name or description that says path; the source / destination of
    a tool whose `description` is about files)."""
    room = held(name, schema, "path")
    if room:
        return room
    said = "path" in words(name) or "path" in words(str(schema.get("description", "")))
    ends = bool(MOVE_ENDS.match(name)) and schema.get("type") in ("string", None) and bool(_ABOUT_FILES.search(description or ""))
    return int(said or ends)



def _name_words(name: str) -> list[str]:
    return [w for w in words(name) if len(w) >= 3 and w not in NAME_FILLER]


def mentioned(name: str, schema: Mapping[str, Any], request: str) -> bool:
    """Whether the request talks about an optional parameter, so the grammar should have the model write it (the
    unstated-value filter still drops a value the request does not give): at least half of the words of its name,
    one of its choices (enum or quoted examples), a date / time / year when it takes one.

    >>> mentioned("has_laundry_service", {"type": "boolean"}, "a house with laundry service")
    True
    >>> mentioned("mode", {"type": "string", "enum": ["driving", "transit"]}, "by transit please")
    True
    >>> mentioned("show_time", {"type": "string", "description": "HH:MM"}, "for the 5:30pm show"), mentioned("year", {}, "in Paris")
    (True, False)
    >>> mentioned("max_count", {"type": "integer", "description": "Maximum number of commits to show"}, "the last two commits")
    True
    >>> mentioned("max_count", {"type": "integer"}, "the last 3 commits")  # a bare count: `grammar_schema` decides
    False
    """
    if _name_said(name, request):
        return True
    text = f" {' '.join(words(request))} "
    if any(words(c) and f" {' '.join(words(c))} " in text for c in schema_choices(schema)):
        return True
    fmt = value_format(schema)
    if (fmt == "date" or date_layout(schema)) and request_dates(request) or fmt == "time" and request_times(request):
        return True
    # a count of something the parameter's description names ("Maximum number of commits")
    if schema.get("type") in ("integer", "number") and counted(request) & {prefix_stem(w) for w in _name_words(str(schema.get("description", "")))}:
        return True
    return "year" in words(name) and schema.get("type") in ("integer", "number", "string") and bool(YEAR.search(request))


def _name_said(name: str, request: str) -> bool:
    """At least half of the words of the parameter's name are words of the request."""
    said = {prefix_stem(w) for w in words(request)}
    own = _name_words(name)
    return bool(own) and sum(prefix_stem(w) in said for w in own) * 2 >= len(own)


def rival_counts(names: Sequence[str], props: Mapping[str, Any], request: str) -> set[str]:
    """Of the number parameters in `names` that the request does not name, the ones to leave unwritten because they
    count the same thing as a rival ("the first 3 lines": read_text_file's `head` and `tail` both describe "N lines",
    and both had been written with 3, which the server refused) whose description has a word the request says and
    theirs lacks ("first", in `head`'s) while theirs has none the rival's lacks.

    >>> props = {"head": {"type": "number", "description": "returns only the first N lines of the file"},
    ...          "tail": {"type": "number", "description": "returns only the last N lines of the file"}}
    >>> rival_counts(["head", "tail"], props, "the first 3 lines"), rival_counts(["head", "tail"], props, "3 lines")
    ({'tail'}, set())
    """
    said = {prefix_stem(w) for w in words(request)}
    counts = counted(request)
    numbers = [n for n in names if isinstance(props.get(n), Mapping) and props[n].get("type") in ("integer", "number")
               and not _name_said(n, request)]
    told = {n: {prefix_stem(w) for w in words(str(props[n].get("description", "")))} for n in numbers}
    drop: set[str] = set()
    for i, a in enumerate(numbers):
        for b in numbers[i + 1:]:
            if not counts & told[a] & told[b]:
                continue
            only_a, only_b = (told[a] - told[b]) & said, (told[b] - told[a]) & said
            if only_a and not only_b:
                drop.add(b)
            elif only_b and not only_a:
                drop.add(a)
    return drop


_COUNT_WORDS = frozenset("count num number limit max top".split())


def bare_count(name: str, schema: Mapping[str, Any]) -> bool:
    """An integer parameter named only as a count, with no description of what it counts: `max_count` (mcp-server-git's
    git_log), `limit`, `top_n`, `num_results` — not `num_guests`.

    >>> bare_count("max_count", {"type": "integer"}), bare_count("num_guests", {"type": "integer"})
    (True, False)
    """
    said = words(name)
    return (schema.get("type") == "integer" and not schema.get("description") and bool(_COUNT_WORDS & set(said))
            and set(said) <= _COUNT_WORDS | {"n", "k", "results", "items"})


def unclaimed_counts(request: str, props: Mapping[str, Any]) -> set[str]:
    """What the request counts ("the last two commits") that no number parameter's name or description and no
    parameter's choices name: the count a bare count parameter stands for ("two adults" belongs to `number_of_adults`,
    "16 ounces" to a unit choosing "ounces"; git_log's `start_timestamp`, "filtering commits", takes no number).

    >>> sorted(unclaimed_counts("two adults, the last 3 commits", {"number_of_adults": {"type": "integer"},
    ...                                                            "since": {"type": "string", "description": "commits after"}}))
    ['commi']
    """
    claimed: set[str] = set()
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        if sub.get("type") in ("integer", "number"):
            claimed |= {prefix_stem(w) for w in words(f"{name} {sub.get('description', '')}")}
        claimed |= {prefix_stem(w) for choice in schema_choices(sub) for w in words(choice)}
    return counted(request) - claimed


def counted(request: str) -> set[str]:
    """Stems of the words a number counts in the request ("the last two commits", "3 tickets"): a count parameter
    whose description names that thing ("Maximum number of commits") is talked about even when its name is not.

    >>> sorted(counted("Show the last two commits and 3 tags at 4.5 m"))
    ['commi', 'tags']
    """
    said = words(request)
    return {prefix_stem(b) for a, b in zip(said, said[1:])
            if (a.isdigit() or a in NUMBER_WORDS and NUMBER_WORDS[a] >= 1) and len(b) >= 3 and b.isalpha()
            and b not in STOPWORDS and b not in NUMBER_WORDS}


def _flag_options(schema: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """(true, false) as the schema writes them: booleans, or an enum of "True"/"False" strings."""
    if schema.get("type") == "boolean":
        return True, False
    enum = schema.get("enum")
    if isinstance(enum, list) and "True" in enum and "False" in enum:
        return "True", "False"
    return None


def flag_in_request(name: str, schema: Mapping[str, Any], request: str) -> Any:
    """A flag's value when the request names it: true, or false when a negation ("no", "non-", "without", "don't")
    stands just before the name's first word in the request; None when the request does not name it.

    >>> flag_in_request("smoking_allowed", {"type": "boolean"}, "a non-smoking room, please")
    False
    >>> flag_in_request("standardize", {"type": "boolean"}, "Also apply standardization."), flag_in_request("recursive", {"type": "boolean"}, "list it")
    (True, None)
    """
    options = _flag_options(schema)
    own = [prefix_stem(w) for w in _name_words(name)]
    if options is None or not own:
        return None
    said = words(request)
    hits = [i for i, w in enumerate(said) if prefix_stem(w) in own]
    if len({prefix_stem(said[i]) for i in hits}) * 2 < len(own):
        return None
    before = said[max(0, hits[0] - 3):hits[0]]
    return options[1] if any(w in NEGATIONS for w in before) else options[0]
