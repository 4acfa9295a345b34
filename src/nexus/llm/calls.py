"""The LLM path of one turn: the gate's decision in, a validated tool call (or a plain answer) out.

ROUTE shows the routed tool's full schema and decodes only its arguments; SHORTLIST shows the candidates'
signatures and lets the model pick a name first, then its arguments continue the same prompt ("one-prompt": the
request is prefilled once) or, with "two-prompts", are written in a second prompt against the picked tool's full
schema (`shortlist_view`); FALLBACK shows every full schema. Lists are shown best-ranked last (next to the request),
and the model's pick is fused with the gate's belief (`rank_prior`): a model overrides the gate only when it is
confident. Arguments are decoded
under the chosen tool's JSON-Schema grammar and validated with `jsonschema` against the full schema. An
invalid call gets one repair (the tool's full schema, the rejected JSON and the validator's message), then
the FALLBACK path; NO_TOOL turns get a plain answer. A valid call to a tool its server marks destructive that writes
a value the request does not state is held back (`nexus.llm.destructive`): the model picks once more among the
other candidates, and no call is made when that one cannot run either.

>>> from nexus.registry import Registry, Tool
>>> reg = Registry(); _ = reg.set_source("s", [Tool("ping", "Ping a host", {"type": "object",
...     "properties": {"host": {"type": "string"}}, "required": ["host"]}, "s")])
>>> ToolCaller(None, reg).validate("ping", '{"host": 1}', finished=True)[1]
"host: 1 is not of type 'string'"
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence


from nexus.errors import ConfigError, GrammarError, NexusError
from nexus.gate.decision import Action, Decision
from nexus.gate.evidence import (LISTS_FOLDERS, TurnEvidence, asks_change, contrary, contradicted, joins_name_word,
                                 negated, runs_sql, server_prefix, spells_name, spells_unprefixed)
from nexus.gate.gate import opens_as_continuation
from nexus.gate.memory import adds_to_memory, keeps_memory, removes_from_memory
from nexus.gate.novelty import acts_on_existing, introduces_new
from nexus.gate.properties import asked_properties, describes_property
from nexus.llm.anchors import quoted_after
from nexus.llm.base import Generation, LLMBackend, Prompt
from nexus.llm.destructive import unstated_change
from nexus.llm.grammars import arguments_gbnf
from nexus.llm.items import stated_items
from nexus.llm.names import names_as_written, request_names
from nexus.llm.nested import properties
from nexus.llm.prompts import Exchange, PromptBuilder, copied_example, schema_line, signature_line
from nexus.llm.relations import relates, self_related, stated_relation
from nexus.llm.replacements import request_replacement, stated_replacement, takes_replacement
from nexus.llm.statements import forgets_the_thing, request_statement, stated_statements, takes_statements
from nexus.llm.parameters import (asks_to_read, named_values, room_for, stated_commit, stated_kinds, takes_path,
                                   unstated_required)
from nexus.llm.stated import request_times, request_zones, unwritten_folder
from nexus.llm.values import normalise_arguments
from nexus.paths import written_paths
from nexus.registry import Registry, Tool
from nexus.registry.tool import arguments_validator, first_argument_error
from nexus.signatures import retrieval_text

log = logging.getLogger(__name__)
ANSWER_TOKENS = 64
ANY_OBJECT = {"type": "object"}  # the grammar of last resort: any JSON object (validation still checks the schema)
SHORTLIST_VIEWS = ("one-prompt", "two-prompts")


# nested values the small model fills badly, each set from what the request states (after `normalise_arguments`)
NESTED_CONVENTIONS = (stated_replacement, stated_relation, stated_items, stated_statements, names_as_written)
UNSTATED_PRIOR = 0.1  # a listed tool that does not fit what the request states (`ToolCaller._grounded`; session 12)
CONTRADICTED = 3  # misfits for a tool whose name contradicts the request (`evidence.contradicted`): a weight of 0.001
# misfits for a tool its server marks as changing something, for a turn that only asks (a weight of 0.01): one (0.1) had
# left "What's the state of my repository?" with git_commit, the gate's first at 0.70 (held-out set 48)
WRITE_FOR_QUESTION = 2
# misfits for a tool that takes nothing when the request names something to work on (a weight of 0.01): one had left
# "What does the knowledge graph know about Acme?" with read_graph(), the gate's first at 0.93 (held-out set 66)
NAMED_FOR_EMPTY = 2


def _pinned(tool: Tool) -> set[str]:
    """The values the set-up fills for `tool` (`Tool.pinned`), as the request may write them: without surrounding
    space or a trailing slash, and only those of more than one character.

    >>> from dataclasses import replace
    >>> sorted(_pinned(replace(Tool("t", "", {}, "s"), pinned={"repo_path": "/ws/repo/", "depth": 3, "root": "/"})))
    ['/ws/repo']
    """
    pins = (str(value).strip().rstrip("/") for value in tool.pinned.values())
    return {pin for pin in pins if len(pin) > 1}


def _prefer(misfits: list[int], fitting: Sequence[bool], reasons: int = 1) -> list[int]:
    """`reasons` more against every tool that does not fit, when a listed tool does (none fitting: unchanged).

    >>> _prefer([0, 1, 0], [True, False, False]), _prefer([0, 1], [False, False]), _prefer([0, 0], [True, False], 2)
    ([0, 2, 1], [0, 1], [0, 2])
    """
    return [m + reasons * (not f) for m, f in zip(misfits, fitting)] if any(fitting) else misfits


def rank_prior(p_top1: float, n: int, scores: Sequence[float] = ()) -> list[float]:
    """The gate's belief over a ranked list: p_top1 on the first, the rest shared by rank (e^-rank) and, when the
    gate's order scores are given (one per tool, all finite), by how far each falls below the second
    (e^-rank * e^(score - second score)): a tool the gate put far behind keeps almost no share, so the model's pick
    cannot land on it ("What time is it in Tokyo?" had gone to `git_log`, scored 6.6 below `get_current_time`,
    because rank alone left it 0.028 of the prior, close to the time tools' own shares).

    >>> [round(p, 3) for p in rank_prior(0.8, 3)]
    [0.8, 0.146, 0.054]
    >>> [round(p, 3) for p in rank_prior(0.8, 3, [11.2, 9.6, 3.0])]
    [0.8, 0.2, 0.0]
    >>> [round(p, 3) for p in rank_prior(0.2, 3)]  # the first keeps at least the second's share
    [0.333, 0.333, 0.333]
    """
    if n <= 1:
        return [1.0] * n
    top = min(max(p_top1, 1e-3), 1 - 1e-3)
    rest = [math.exp(-rank) for rank in range(1, n)]
    if len(scores) == n and all(math.isfinite(s) for s in scores):
        rest = [w * math.exp(min(0.0, s - scores[1])) for w, s in zip(rest, scores[1:])]
    prior = [top] + [(1 - top) * w / sum(rest) for w in rest]
    # never more on a tool than on one the gate ranked above it: with p_top1 under ~0.37 the second alone would
    # take more than the first ("What are my unstaged edits?": git_commit 0.58 against git_diff_unstaged 0.24,
    # which the gate had ranked first)
    for i in range(1, n):
        prior[i] = min(prior[i], prior[i - 1])
    return [p / sum(prior) for p in prior]


@dataclass(frozen=True)
class ToolCall:
    """What the LLM path produced for one turn."""

    tool: str | None                       # registry key of the called tool; None for an answer or a failure
    arguments: dict[str, Any] | None
    answer: str | None = None              # the plain answer of a NO_TOOL turn
    valid: bool = False                    # arguments validated against the tool's full schema
    path: Action = Action.NO_TOOL          # the path that produced the result (FALLBACK after a failed repair)
    attempts: int = 1                      # 1 + repair + fallback attempts
    errors: tuple[str, ...] = ()           # validator messages of rejected attempts
    prompt_tokens: int = 0                 # main-context tokens when the (first) arguments were decoded
    prefilled_tokens: int = 0              # of those, computed this turn (the rest were a cached prefix)
    t_first_arg: float | None = None       # perf_counter() at the first token of the first arguments' JSON
    t_end: float = 0.0
    t_call_first_arg: float | None = None  # first token of the returned call's arguments (a repair's, a fallback's)
    fallback_truncated: bool = False       # FALLBACK showed only the best-ranked schemas that fit (logged)


@dataclass(frozen=True)
class _Attempt:
    key: str
    generation: Generation
    arguments: dict[str, Any] | None
    error: str | None
    prefilled_tokens: int          # computed for this attempt: the name choice's prefill plus the arguments'


class ToolCaller:
    """Runs the LLM path for decisions over one registry."""

    def __init__(self, backend: LLMBackend, registry: Registry, prompts: PromptBuilder | None = None,
                 max_arg_tokens: int = 256, fuse_prior: bool = True, normalise: bool = True,
                 shortlist_view: str = "one-prompt", isolated_lines: bool = False):
        if shortlist_view not in SHORTLIST_VIEWS:
            raise ConfigError(f"unknown shortlist view {shortlist_view!r}; choose one of {', '.join(SHORTLIST_VIEWS)}")
        self.shortlist_view = shortlist_view
        self.backend = backend
        self.normalise = normalise
        self.fuse_prior = fuse_prior
        self.registry = registry
        # `isolated_lines` shapes the default prompts only (NEXUS_KV_ISOLATED_LINES); given `prompts` keep their own
        self.prompts = prompts or PromptBuilder(chat_template=getattr(backend, "chat_template", None),
                                                isolated_lines=isolated_lines)
        self.max_arg_tokens = max_arg_tokens
        self._validators: dict[str, Any] = {}

    # -- validation --------------------------------------------------------------------------------
    def _validator(self, key: str) -> Any:
        tool = self.registry.get(key)
        cached = self._validators.get(key)
        if cached is None or cached[0] != tool.content_hash:
            cached = self._validators[key] = (tool.content_hash, arguments_validator(dict(tool.input_schema)))
        return cached[1]

    def validate(self, key: str, text: str, finished: bool, request: str | None = None,
                 looped: bool = False) -> tuple[dict[str, Any] | None, str | None]:
        """(arguments, None) when `text` is a JSON object valid for the tool, else (parsed or None, message).
        With the `request`, values are first normalised and unstated optional ones dropped (`nexus.llm.values`).
        `finished` False: the decoding was cut short, at the token cap or (`looped`) in a loop."""
        if looped:
            return None, "the arguments ran into a loop (one short cycle of tokens repeated) and were stopped"
        if not finished:
            return None, f"the arguments were cut off after {self.max_arg_tokens} tokens"
        try:
            value = json.loads(text)
        except ValueError as exc:
            return None, f"not JSON: {exc}"
        if not isinstance(value, dict):
            return None, "the arguments must be a JSON object"
        if request is not None and self.normalise:
            tool = self.registry.get(key)
            value = normalise_arguments(value, tool.input_schema, request, tool_name=key, description=tool.description,
                                        tables=tool.tables)
            for convention in NESTED_CONVENTIONS:
                value = convention(value, tool.input_schema, request)
        try:
            return value, first_argument_error(self._validator(key), value)
        except NexusError as exc:  # a `$ref` that does not resolve within the schema: no call can be valid
            return value, f"the tool's schema is broken: {exc}"

    @staticmethod
    def _context(history: Sequence[Exchange]) -> str:
        """The earlier requests a follow-up leans on (the router passes history only for follow-ups): their values
        are offered too where the turn states fewer (`grammars.grammar_schema`), and count as stated."""
        return " ".join(ex.request for ex in history[-2:])

    @classmethod
    def _request(cls, turn: str, history: Sequence[Exchange]) -> str:
        """The turn with the earlier requests it leans on: what its values may be stated in."""
        return f"{cls._context(history)} {turn}".strip()

    def _grounding(self, turn: str, tool: Tool) -> str | None:
        """The request the grammar takes stated values from (None: the plain schema grammar), less the values the
        set-up pins for `tool` (`_pinned`): "Stage notes.txt in /ws/repo." had offered the pinned repository path
        as one of the files git_add stages, and the model staged the repository."""
        if not self.normalise:
            return None
        for pin in _pinned(tool):  # the pinned path itself, not a longer one inside it ("/ws/repo/notes.md")
            turn = re.sub(rf"{re.escape(pin)}/?(?![\w/-])", " ", turn)
        return turn

    # -- prompts -----------------------------------------------------------------------------------
    def tool_lines(self, keys: Sequence[str], view: str) -> list[str]:
        render = schema_line if view == "schema" else signature_line
        return [render(key, self.registry.get(key)) for key in keys]

    def fitting_keys(self, turn: str, keys: Sequence[str], history: Sequence[Exchange] = ()) -> list[str]:
        """The longest prefix of `keys` whose full schemas fit the context with room for the call."""
        budget = self.backend.n_ctx - self.max_arg_tokens - 64
        used = self.backend.count_tokens(self.prompts.call_prompt(turn, [], history))
        overhead = self.backend.count_tokens(Prompt(()))  # BOS, counted once in `used`
        kept: list[str] = []
        for key, line in zip(keys, self.tool_lines(keys, "schema")):
            used += self.backend.count_tokens(Prompt((line,))) - overhead
            if used > budget:
                break
            kept.append(key)
        return kept

    # -- the path ----------------------------------------------------------------------------------
    def attempt(self, turn: str, keys: Sequence[str], view: str, history: Sequence[Exchange] = (),
                prior: Sequence[float] | None = None, blocks: bool = False, schema_prompt: bool = False) -> _Attempt:
        """Show `keys` in this order (as full schemas or signatures), pick one (unless there is one) — fused with
        `prior`, one probability per key, when given — and decode its arguments: after the pick in the same prompt,
        or (`schema_prompt`, a name picked from signatures) in a second prompt that shows its full schema. `blocks`:
        the tool lines may come from compiled KV blocks (ROUTE and SHORTLIST; FALLBACK and the baselines prefill them)."""
        call = self.prompts.call_prompt(turn, self.tool_lines(keys, view), history, blocks=blocks)
        chosen = 0
        if len(keys) == 1:
            key = keys[0]
        else:
            selection = self.backend.choose(call, list(keys), prior)
            key, chosen = selection.option, selection.prefilled_tokens
        if schema_prompt and view != "schema":
            call = self.prompts.call_prompt(turn, self.tool_lines([key], "schema"), history, blocks=blocks)
        generation, arguments, error = self._decode(self.prompts.arguments_prompt(call, key), key, turn, history)
        return _Attempt(key, generation, arguments, error, chosen + generation.prefilled_tokens)

    def call(self, turn: str, decision: Decision, history: Sequence[Exchange] = (),
             fallback_order: Callable[[], Sequence[str]] | None = None) -> ToolCall:
        """Run the path the decision names; see the module docstring for repair and fallback. A call that may destroy
        data and writes a value the request does not state, or asks to replace text and cannot, is held back
        (`destructive.unstated_change`), as is one that relates a thing to itself (`relations.self_related`): the model
        picks once more among the decision's other candidates, and when that call cannot run either, none is made."""
        result = self._call(turn, decision, history, fallback_order)
        held = self._held_back(result, turn, history)
        if held is None:
            return result
        log.info("call held back: %s", held)
        return self._second_pick(turn, decision, history, result, held)

    def _held_back(self, call: ToolCall, turn: str, history: Sequence[Exchange]) -> str | None:
        if not self.normalise or call.tool is None or not call.valid:
            return None
        tool = self.registry.get(call.tool)
        request = self._request(turn, history)
        copied = copied_example(call.arguments or {}, request)
        if copied is not None:  # a file of the prompt's examples, not of the user's: another tool is picked
            return f"{call.tool}: {copied}"
        itself = self_related(call.arguments or {}, tool.input_schema)
        if itself is not None:  # a write no request asks for: the model picks again without this tool
            return f"{call.tool} would relate {itself!r} to itself"
        return forgets_the_thing(tool, request) or unstated_change(tool, call.arguments, request)

    def _second_pick(self, turn: str, decision: Decision, history: Sequence[Exchange], first: ToolCall,
                     held: str) -> ToolCall:
        """The decision's other candidates, in the gate's order with its grounded prior, for the held-back call."""
        keys = [h.key for h in decision.candidates if h.key != first.tool]
        errors = first.errors + (held,)
        common = dict(prompt_tokens=first.prompt_tokens, prefilled_tokens=first.prefilled_tokens,
                      t_first_arg=first.t_first_arg)
        if not keys:
            return ToolCall(None, None, None, False, first.path, first.attempts, errors, t_end=first.t_end, **common)
        prior = self._grounded(rank_prior(decision.p_top1, len(keys)), keys, turn, history) if self.fuse_prior else None
        second = self.attempt(turn, keys[::-1], "signature", history, prior[::-1] if prior else None)
        gen = second.generation
        request = self._request(turn, history)
        tool = self.registry.get(second.key)
        again = second.error or copied_example(second.arguments or {}, request) or forgets_the_thing(tool, request) or \
            unstated_change(tool, second.arguments, request)
        if again is None:
            return ToolCall(second.key, second.arguments, None, True, Action.SHORTLIST, first.attempts + 1, errors,
                            t_end=gen.t_end, t_call_first_arg=gen.t_first_token, **common)
        return ToolCall(None, None, None, False, first.path, first.attempts + 1, errors + (again,), t_end=gen.t_end,
                        **common)

    def _call(self, turn: str, decision: Decision, history: Sequence[Exchange] = (),
              fallback_order: Callable[[], Sequence[str]] | None = None) -> ToolCall:
        if decision.action is Action.NO_TOOL or (not decision.candidates and decision.action is not Action.FALLBACK):
            return self.answer(turn, history)
        if decision.action is Action.ROUTE:
            first = self.attempt(turn, [decision.candidates[0].key], "schema", history, blocks=True)
        elif decision.action is Action.SHORTLIST:
            ranked = [h.key for h in decision.candidates]
            prior = self._grounded(rank_prior(decision.p_top1, len(ranked), decision.scores), ranked, turn, history) if self.fuse_prior else None
            if prior:  # a tool the grounding weighted down moves back with its prior (a stable sort: else rank order)
                order = sorted(range(len(ranked)), key=lambda i: -prior[i])
                ranked, prior = [ranked[i] for i in order], [prior[i] for i in order]
            # best-ranked last, next to the request: small models pick what they read last (measured)
            first = self.attempt(turn, ranked[::-1], "signature", history, prior[::-1] if prior else None, blocks=True,
                                 schema_prompt=self.shortlist_view == "two-prompts")
        else:
            return self._fallback(turn, decision, history, fallback_order, attempts=0, errors=())
        common = dict(prompt_tokens=first.generation.prompt_tokens, prefilled_tokens=first.prefilled_tokens,
                      t_first_arg=first.generation.t_first_token)
        if first.error is None:
            return ToolCall(first.key, first.arguments, None, True, decision.action, 1, (), t_end=first.generation.t_end,
                            t_call_first_arg=first.generation.t_first_token, **common)
        log.info("tool call %s rejected (%s); repairing", first.key, first.error)
        arguments, error, generation = self.repair(turn, first, history)
        if error is None:
            return ToolCall(first.key, arguments, None, True, decision.action, 2, (first.error,), t_end=generation.t_end,
                            t_call_first_arg=generation.t_first_token, **common)
        log.info("repair of %s rejected (%s); falling back to all schemas", first.key, error)
        fallback = self._fallback(turn, decision, history, fallback_order, attempts=2, errors=(first.error, error))
        return ToolCall(fallback.tool, fallback.arguments, None, fallback.valid, Action.FALLBACK, fallback.attempts,
                        fallback.errors, t_end=fallback.t_end, fallback_truncated=fallback.fallback_truncated,
                        t_call_first_arg=fallback.t_call_first_arg, **common)

    def _grounded(self, prior: list[float], keys: Sequence[str], turn: str, history: Sequence[Exchange] = ()) -> list[float]:
        """The prior with each tool that does not fit what the request states weighted down by UNSTATED_PRIOR and
        renormalised: it would have to invent a required zone, date or time the request does not state
        (`unstated_required`), the request writes a path or names a folder and the tool takes none (`takes_path`), or the request
        names something for the tool to work on ("… notes about Alice", `named_values`) and the tool takes no
        parameter at all (the demo's "Search my knowledge graph for notes about Alice" went to `read_graph()`; this
        reason counts twice, NAMED_FOR_EMPTY).
        A question, or an order to show something, also down-weights each tool its server marks as changing something
        (MCP `readOnlyHint: false`) when a read-only one is listed beside it, and a request to record, write or remove
        something each tool marked read-only when one that changes something is listed (`evidence.asks_change`); and a
        tool with room for fewer of the clock times or (from two) time zones or paths the request writes than another
        listed tool has is weighted down too (`stated_kinds`, `room_for`: "If it is 14:30 in Berlin, what time is it in New York?"), as is one that runs
        no SQL of the kind the turn writes out or asks for in words when a listed one does (`evidence.runs_sql`), and
        one whose name creates what the turn asks to remove, or removes what it asks to add (`evidence.contrary`), or
        carries a word the turn says with "not" beside a listed name with its "un-" form (`evidence.negated`), or, for a
        turn that asks a file's size, dates or metadata, does not name them where a listed tool does (`gate.properties`),
        or works only on existing things when the turn introduces a new one by name (`gate.novelty`), or is not named
        by the turn where another listed tool's every name word, or every one after its server's prefix, is a word of
        it (`evidence.spells_name`, `spells_unprefixed`) or one of
        its name words as two (`evidence.joins_name_word`), or has no old /
        new text pair for a replacement the turn states (`replacements.takes_replacement`), or lacks the parameter the
        turn quotes a value for by name (`anchors.quoted_after`: "with the message 'Fix typo'"), or adds nothing to a
        memory for a fact the turn asks kept (`gate.memory.asks_to_keep`), or reads none for a question about what is
        kept (`gate.memory.asks_memory`), or removes whole things for a fact the turn asks forgotten
        (`statements.takes_statements`), or relates two named
        things where the turn names fewer (`relations.relates`, `names.request_names`). A required revision the turn
        states no commit for counts as an invented value (`parameters.unstated_required`).
        Each reason counts: a tool is weighted by UNSTATED_PRIOR once for every reason more than the best-fitting listed
        tool has (unchanged when all have as many). A soft weight: the model still overrides it when it is confident."""
        if not self.normalise:
            return prior
        question = asks_to_read(turn)  # the turn's own words, not the request it leans on
        against = [contrary(turn, key) or negative for key, negative in zip(keys, negated(turn, keys))]
        evidence = TurnEvidence.of(turn, self.registry.tables())  # what the gate read in the turn's own words: SQL, memory, folders
        own, turn = turn, self._request(turn, history)
        tools = [self.registry.get(k) for k in keys]
        # a path the turn writes as the value of a parameter the set-up fills (`Tool.pinned`) is no path to place: "Create
        # a branch called feature-x in the repository /ws/repo" had weighed git_create_branch (repo_path pinned) down
        # against create_directory, and a directory was made
        pins = set().union(*map(_pinned, tools))
        path = any(p.rstrip("/") not in pins for p in written_paths(turn)) or any(
            folder != "." for folder in unwritten_folder(turn))  # or names a folder: "What's inside the repo folder?"
        schemas = [tool.input_schema for tool in tools]
        # names are looked for only when a listed tool takes nothing (the known words are every listed tool's text)
        named = any(not schema.get("properties") for schema in schemas) and bool(
            named_values(turn, " ".join(retrieval_text(k, tool) for k, tool in zip(keys, tools))))
        # a question is answered by a tool its server marks read-only, where one is listed: "Is there anything to
        # commit?" had called git_commit
        reads = question and any(tool.read_only for tool in tools)
        # and a request to record, write or remove something by a tool its server marks as changing something, where one
        # is listed: "Note in my knowledge graph that Acme is based in Denver." had called search_nodes
        changes = asks_change(own) and any(tool.read_only is False for tool in tools)
        # each reason a tool does not fit counts once: two reasons weigh it down twice
        misfits = [int(bool(unstated_required(schema, turn))) + (path and not takes_path(schema, tool.description))
                   + NAMED_FOR_EMPTY * (named and not schema.get("properties")) + WRITE_FOR_QUESTION * (reads and tool.read_only is False)
                   + (changes and tool.read_only is True) + wrong_way
                   for tool, schema, wrong_way in zip(tools, schemas, against)]
        # the request writes more clock times, zones or paths than this tool has room for, and a listed tool has more:
        # "If it is 14:30 in Berlin, what time is it in New York?" had called get_current_time(Berlin), dropping the
        # rest; "Open notes.txt and repo/notes.md at the same time." read_file(notes.txt) beside read_multiple_files
        # a commit is the turn's own: one an earlier request named is no commit this turn asks about ("What did I change
        # that isn't staged yet?" had taken "the most recent commit" from two turns before and called git_show)
        kinds = {kind: n for kind, n in stated_kinds(turn).items() if kind != "revision"}
        if stated_commit(own):
            kinds["revision"] = 1
        if history and opens_as_continuation(own):
            # "And in Lisbon?" after "What time is it in Vancouver?": a value the follow-up states replaces the one
            # before it, so that kind is counted in the follow-up alone (two zones had made it a conversion)
            written = {"zone": request_zones(own), "time": request_times(own), "path": written_paths(own)}
            kinds = {kind: n for kind, n in kinds.items() if not written.get(kind)} | stated_kinds(own)
        for kind, n in kinds.items():
            room = [min(room_for(schema, kind, tool.description), n) for tool, schema in zip(tools, schemas)]
            misfits = [m + (r < max(room)) for m, r in zip(misfits, room)]
        # a SQL statement written out goes to a listed tool that runs statements of its kind ("Run this SQL: DELETE
        # FROM notes WHERE id = 3." had called the knowledge graph's delete_relations)
        if evidence.sql:
            misfits = _prefer(misfits, [runs_sql(tool.description, schema, evidence.sql) for tool, schema in zip(tools, schemas)])
        # the turn asks a file's size, dates or metadata: a listed tool whose description names them goes before one
        # that reads what the file holds ("How big is notes.txt?" had read it; `nexus.gate.properties`)
        if asked := asked_properties(own):  # twice (a weight of 0.01): at 0.1 the model still read the file for "How large
            # is notes.txt?" and "What is the modification date of notes.txt?" (sets 64 and 82)
            misfits = _prefer(misfits, [describes_property(tool.description, asked) for tool in tools], reasons=2)
        # the turn introduces something by name ("Add a person named Dave …"): a listed tool that works only on existing
        # things goes behind the others (`add_observations` had been picked beside `create_entities`; `gate.novelty`)
        if introduces_new(own):
            misfits = [m + acts_on_existing(tool.description) for m, tool in zip(misfits, tools)]
        # the turn states a replacement ("Replace 'Acme' with 'Globex' in notes.txt."): a listed tool with an old / new
        # text pair goes before one without (write_file had overwritten notes.txt with "Acme"; `llm.replacements`)
        if request_replacement(own):
            misfits = _prefer(misfits, [takes_replacement(schema) for schema in schemas])
        # the turn quotes a value for a parameter by its name ("Commit the staged changes with the message 'Fix typo'."):
        # a listed tool with that parameter goes before one without (git_diff_staged had been picked)
        misfits = _prefer(misfits, [any(quoted_after(n, own) for n in properties(schema)) for schema in schemas])
        # the turn asks to keep a fact about someone named ("Remember that Dave is my dentist."): a listed tool that adds to
        # a knowledge graph or memory goes before one that does not (`append_insight`, a note tool, had been picked)
        if evidence.keep:
            misfits = _prefer(misfits, [adds_to_memory(tool.description) for tool in tools])
        # the turn asks what is kept about someone ("What do I have stored about Bob?"): a listed tool that reads a
        # knowledge graph or memory goes first (`get_file_info` had been picked, with a path from the prompt's examples)
        if evidence.memory:
            misfits = _prefer(misfits, [keeps_memory(tool.description) for tool in tools])
        # the turn asks to forget a fact ("Forget that Alice likes tennis."): a listed tool that removes statements about a
        # thing goes before one that removes the thing (`delete_entities` would delete Alice)
        if evidence.forget and request_statement(own):
            misfits = _prefer(misfits, [takes_statements(schema) for schema in schemas])
        # the turn asks to forget a thing it names, with no statement about it ("Remove Acme from my knowledge graph."): a
        # listed tool that removes things goes before one that removes statements or relations (`delete_observations`
        # had been called with no observations)
        elif evidence.forget:  # twice (a weight of 0.01): the gate had put delete_entities at 0.04 behind delete_observations
            # at 0.45, and one weight of 0.1 left delete_observations first (set 17)
            removes_things = [removes_from_memory(tool.description) and not takes_statements(schema)
                              and not relates(schema) for tool, schema in zip(tools, schemas)]
            misfits = _prefer(misfits, removes_things, reasons=2)
        # the turn names fewer than two things: a listed tool that relates two named things goes behind ("Remember that
        # Carol is a software engineer." had created a relation from Carol to "Eric"; `llm.names`)
        if len(request_names(own)) < 2:
            misfits = [m + relates(schema) for m, schema in zip(misfits, schemas)]
        # the turn spells a listed tool's whole name ("Show the directory tree …": `directory_tree`): the others go behind
        # (not a read-only one for a request to change something: "Make a new git branch" spells `git_branch`)
        # ... or spells it without the prefix its server's tools share ("Create a branch called feature-search.": `git_create_branch`)
        prefixes = self._server_prefixes(keys)
        misfits = _prefer(misfits, [(spells_name(own, tool.name) or spells_unprefixed(own, tool.name, prefixes[key]))
                                    and not (changes and tool.read_only is True) for key, tool in zip(keys, tools)])
        # the turn asks what a folder it names holds: a listed tool that lists a folder goes first ("Show me what's inside the
        # repo folder." had called git_diff_unstaged)
        if evidence.folder:
            misfits = _prefer(misfits, [bool(LISTS_FOLDERS.search(tool.description or "")) for tool in tools])
        # a tool whose name says the "un-" form of a word the turn says plainly goes far behind ("Show the changes I've
        # already staged." had called git_diff_unstaged against a prior of 0.05)
        misfits = [m + CONTRADICTED * c for m, c in zip(misfits, contradicted(own, [tool.name for tool in tools]))]
        # the turn writes a word of a listed tool's name as two ("Check out the main branch.": `git_checkout`; `git_branch`
        # had been picked)
        misfits = _prefer(misfits, [joins_name_word(own, tool.name) for tool in tools])
        least = min(misfits)
        if max(misfits) == least:
            return prior
        weighted = [p * UNSTATED_PRIOR ** (m - least) for p, m in zip(prior, misfits)]
        return [w / sum(weighted) for w in weighted]

    def _server_prefixes(self, keys: Sequence[str]) -> dict[str, str]:
        """Each listed tool's server prefix (`evidence.server_prefix`), from every tool its server offers."""
        registry = self.registry
        prefix = {source: server_prefix(tuple(tool.name for tool in registry.source_tools(source)))
                  for source in {registry.source_of(k) for k in keys}}
        return {key: prefix[registry.source_of(key)] for key in keys}

    def repair(self, turn: str, first: _Attempt, history: Sequence[Exchange] = ()) -> tuple[dict[str, Any] | None, str | None, Generation]:
        """The one repair a rejected attempt gets: its tool's full schema, the rejected JSON and the validator's
        message, decoded again under the grammar. Returns (arguments, error or None, generation)."""
        tool = self.registry.get(first.key)
        repair = self.prompts.repair_prompt(turn, first.key, tool, first.generation.text, first.error or "", history)
        # a loop repeats under the same grammar (measured: git_log's unasked start_timestamp looped in the attempt
        # and in its repair, and the turn fell back to every schema): the repair writes only the parameters the
        # request asks for
        generation, arguments, error = self._decode(repair, first.key, turn, history, written_only=first.generation.looped)
        return arguments, error, generation

    def _decode(self, prompt: Prompt, key: str, turn: str, history: Sequence[Exchange],
                written_only: bool = False) -> tuple[Generation, dict[str, Any] | None, str | None]:
        """`key`'s arguments decoded after `prompt` and validated, grounded in the turn and the requests it leans on
        (`written_only`: under a grammar of the parameters the turn writes, `grammars.grammar_schema`)."""
        context = self._context(history)
        generation = self._generate_arguments(prompt, key, turn, context, written_only)
        arguments, error = self.validate(key, generation.text, generation.finished, self._request(turn, history),
                                         generation.looped)
        return generation, arguments, error

    def _generate_arguments(self, prompt: Prompt, key: str, turn: str, context: str = "",
                            written_only: bool = False) -> Generation:
        """The arguments of `key` decoded under its schema's grammar; a grammar llama.cpp refuses (one tool's
        pattern or optional parameters past its parser's limits) falls back to any JSON object, with the reason
        logged: the call is still validated against the tool's full schema, so one odd schema never ends the turn."""
        try:
            tool = self.registry.get(key)
            grammar = arguments_gbnf(tool.input_schema, self._grounding(turn, tool), context, written_only, tool.description,
                                     tool.tables)
            return self.backend.generate(prompt, grammar=grammar, max_tokens=self.max_arg_tokens)
        except GrammarError as exc:
            log.warning("tool %s: its arguments grammar was refused (%s); decoding any JSON object instead", key, exc)
            return self.backend.generate(prompt, grammar=arguments_gbnf(ANY_OBJECT), max_tokens=self.max_arg_tokens)

    def _fallback(self, turn: str, decision: Decision, history: Sequence[Exchange],
                  fallback_order: Callable[[], Sequence[str]] | None, attempts: int, errors: tuple[str, ...]) -> ToolCall:
        ranked = [h.key for h in decision.candidates]
        rest = list(fallback_order()) if fallback_order else self.registry.keys()
        keys = ranked + [k for k in rest if k not in set(ranked)]
        truncated = False
        fitting = self.fitting_keys(turn, keys, history)
        if len(fitting) < len(keys):
            truncated = True
            log.warning("FALLBACK: all %d schemas do not fit n_ctx=%d; showing the %d best-ranked", len(keys),
                        self.backend.n_ctx, len(fitting))
            keys = fitting
        if not keys:
            return ToolCall(None, None, None, False, Action.FALLBACK, attempts, errors + ("no schema fits the context",),
                            t_end=time.perf_counter(), fallback_truncated=True)
        prior = self._grounded(rank_prior(decision.p_top1, len(keys)), keys, turn, history) if self.fuse_prior and decision.candidates else None
        result = self.attempt(turn, keys[::-1], "schema", history, prior[::-1] if prior else None)
        gen = result.generation
        return ToolCall(result.key, result.arguments, None, result.error is None, Action.FALLBACK, attempts + 1,
                        errors + ((result.error,) if result.error else ()), prompt_tokens=gen.prompt_tokens,
                        prefilled_tokens=result.prefilled_tokens, t_first_arg=gen.t_first_token, t_end=gen.t_end,
                        t_call_first_arg=gen.t_first_token, fallback_truncated=truncated)

    def answer(self, turn: str, history: Sequence[Exchange] = ()) -> ToolCall:
        generation = self.backend.generate(self.prompts.answer_prompt(turn, history), max_tokens=ANSWER_TOKENS,
                                           stop=("\n",))
        return ToolCall(None, None, generation.text.strip(), True, Action.NO_TOOL, 1, (), generation.prompt_tokens,
                        generation.prefilled_tokens, None, generation.t_end)
