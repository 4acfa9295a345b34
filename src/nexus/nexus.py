"""The facade: one object, built from the settings tree, that owns the registry, the SLB, the gate, the LLM backend
and the MCP hub, and exposes the turn. The CLI, the demo, the benchmarks and both servers go through it.

- `route(messages, tools=None)` -> `Routing`: the gate's decision and what the LLM would be shown (kept / dropped);
- `respond(messages, tools=None)` -> `RoutedTurn`: a validated tool call, or a plain answer on NO_TOOL;
- `await call(name, arguments)` -> the MCP result text of a validated call to a registry tool.

`tools` (a request's own OpenAI or MCP tool list) routes over that list instead of the facade's registry; its index
is cached by content hash, so an agent that resends the same 2,000 tools every turn pays for embedding once, and
rows shared with an earlier list are never embedded again.

>>> from nexus.config import Settings
>>> from nexus.registry import Registry, Tool
>>> from nexus.slb import HashEmbedder
>>> reg = Registry(); _ = reg.set_source("s", [Tool("get_time", "Current time in a timezone", {"type": "object"}, "s"),
...                                           Tool("git_log", "Show the commit log of a git repository", {"type": "object"}, "s")])
>>> nx = Nexus.from_settings(Settings(gate={"model": "/nonexistent"}), registry=reg, embedder=HashEmbedder())
>>> r = nx.route("what is the current time in a timezone")
>>> r.decision.action.value, r.kept
('route', ['get_time'])
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Mapping, Sequence

from nexus.config import Settings
from nexus.conversation import Conversation
from nexus.errors import ArgumentsError, NexusError, RequestError, ToolLoadError, UnknownToolError
from nexus.gate.decision import Action, Decision
from nexus.registry import Registry, Tool
from nexus.router import Gate, RoutedTurn, Router, ScoreGate
from nexus.slb import HybridWeights, SemanticLookasideBuffer
from nexus.slb.index import Hit

log = logging.getLogger(__name__)
VIEWS = 8  # request tool lists whose index is kept


@dataclass(frozen=True)
class Overrides:
    """A client's per-request say over routing (the `nexus` extension field of `serve openai`)."""

    top_k: int | None = None          # at most this many tools on a SHORTLIST
    force_tool: str | None = None     # route to this tool (a name the request offers), skipping the gate
    disable: bool = False             # no routing: every tool (FALLBACK)


@dataclass(frozen=True)
class Routing:
    """One turn's decision over one registry, with everything a client needs to see what was kept and why."""

    conversation: Conversation
    decision: Decision
    registry: Registry = field(repr=False)
    slb_ms: float = 0.0
    gate_ms: float = 0.0
    reason: str = ""
    ranked: tuple[str, ...] = field(default=(), repr=False)   # every key, best first (the FALLBACK order)

    @property
    def kept(self) -> list[str]:
        """Registry keys the model is shown: one on ROUTE, the shortlist, all on FALLBACK, none on NO_TOOL."""
        action = self.decision.action
        if action is Action.NO_TOOL:
            return []
        if action is Action.FALLBACK:
            return list(self.ranked or self.registry.keys())
        keys = [h.key for h in self.decision.candidates]
        return keys[:1] if action is Action.ROUTE else keys

    @property
    def dropped(self) -> list[str]:
        kept = set(self.kept)
        return [k for k in (self.ranked or self.registry.keys()) if k not in kept]

    def names(self, keys: Sequence[str]) -> list[str]:
        """The tools' own names (as the client or server knows them) for registry keys."""
        return [self.registry.get(k).name for k in keys]

    def explain(self) -> dict[str, Any]:
        """The full account: decision, probabilities, kept tools with scores, every dropped tool, the reason."""
        d = self.decision
        scores = {h.key: s for h, s in zip(d.candidates, d.scores)}
        return {"decision": d.action.value, "p_top1": round(d.p_top1, 4), "p_no_tool": round(d.p_no_tool, 4),
                "reason": self.reason,
                "kept": [{"name": self.registry.get(k).name, "key": k,
                          "score": None if k not in scores or scores[k] != scores[k] else round(scores[k], 4)}
                         for k in self.kept],
                "dropped": self.names(self.dropped), "slb_ms": round(self.slb_ms, 2), "gate_ms": round(self.gate_ms, 2)}


class _View:
    """One registry with its index, and its gate and router made on first use (the facade's own registry, or a
    request's tool list)."""

    def __init__(self, owner: "Nexus", registry: Registry, slb: SemanticLookasideBuffer):
        self.owner, self.registry, self.slb = owner, registry, slb
        self.registry_hash = registry.content_hash()
        self.flagged: dict[str, list[Any]] = {}   # request lists: tool name -> high-severity scan findings
        self.skipped: list[str] = []              # request lists: tools that failed their checks, with why
        self._router: Router | None = None

    @property
    def router(self) -> Router:
        """SLB -> gate (-> LLM, once the backend is loaded) for this registry."""
        if self._router is None:
            gate = self.owner.make_gate(self.slb, self.registry)
            self._router = Router(self.registry, self.slb, gate, self.owner._backend, k=self.owner.settings.gate.k,
                                  settings=self.owner.settings)
        return self._router

    @property
    def gate(self) -> Gate:
        return self.router.gate


class Nexus:
    """Everything one deployment routes with. Build it with `Nexus.from_settings`; thread-safe (routing and
    index builds are serialised: the models are shared)."""

    def __init__(self, settings: Settings, registry: Registry, embedder: Any, *, backend: Any = None,
                 gate_factory: Callable[[SemanticLookasideBuffer, Registry], Gate] | None = None,
                 index_path: Path | None = None, require_gate: bool = False):
        self.settings, self.registry, self.embedder = settings, registry, embedder
        self.require_gate = require_gate
        self.weights = HybridWeights(settings.lexical_weight, settings.name_bonus)
        self.index_path = index_path
        self._backend = backend
        self._gate_factory = gate_factory or self._default_gate
        self._gate_model: Any = None
        self._lock = threading.RLock()
        self._views: OrderedDict[str, _View] = OrderedDict()
        self._main: _View | None = None
        self.hub: Any = None
        self.listeners: list[Callable[[str], Any]] = []   # awaited with a server's name after it changed
        self.quarantined: dict[str, list[Any]] = {}       # tool id -> scan findings (left out of the registry)
        self._quarantine = False
        self._connected = False
        self.quarantine_requests = False  # leave poisoned tools out of request tool lists (serve openai sets it)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, *, registry: Registry | None = None, embedder: Any = None,
                      backend: Any = None, gate_factory: Callable[[SemanticLookasideBuffer, Registry], Gate] | None = None,
                      index_path: Path | None = None, require_gate: bool = False) -> "Nexus":
        """Every part from `settings` unless given: the embedder (NEXUS_EMBEDDER), the gate (NEXUS_GATE_*; a
        trained one from the gate folder, else — unless `require_gate` — raw SLB scores with a warning), the LLM
        backend (NEXUS_LLM_*, loaded on the first `respond`). `index_path` keeps the SLB on disk between runs."""
        settings = settings or Settings()
        if embedder is None:
            from nexus.slb import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder(settings.embedder, precision=settings.embedder_precision)
        return cls(settings, registry if registry is not None else Registry(), embedder, backend=backend,
                   gate_factory=gate_factory, index_path=index_path, require_gate=require_gate)

    # -- parts -------------------------------------------------------------------------------------
    @property
    def backend(self) -> Any:
        """The LLM backend (`settings.llm_backend`), loaded on first use."""
        if self._backend is None:
            from nexus.llm import make_backend

            self._backend = make_backend(self.settings)
        return self._backend

    def _default_gate(self, slb: SemanticLookasideBuffer, registry: Registry) -> Gate:
        """The trained gate in the settings' gate folder (loaded once), else `ScoreGate` with a warning."""
        gs = self.settings.gate
        if self._gate_model is None:
            folder = self.settings.gate_dir()
            self._gate_model = False
            from nexus.gate import GateModel, GateModelError

            if folder.is_dir():
                try:
                    self._gate_model = GateModel.load(folder)
                except GateModelError as exc:
                    if self.require_gate:
                        raise
                    log.warning("the gate in %s cannot be used (%s); deciding on raw SLB scores instead", folder, exc)
            elif self.require_gate:
                raise GateModelError(f"no trained gate in {folder}; train one with `nexus gate train` or pass --gate-model")
            else:
                log.warning("no trained gate in %s; deciding on raw SLB scores (train one with `nexus gate train`)", folder)
        if self._gate_model:
            from nexus.gate import BoundaryGate, GateModelError

            try:
                return BoundaryGate.from_settings(slb, registry, self._gate_model, gs)
            except GateModelError as exc:
                if self.require_gate:
                    raise
                log.warning("%s; deciding on raw SLB scores instead", exc)
        return ScoreGate(slb, k=gs.k, shortlist_k=gs.shortlist_k)

    def _build(self, registry: Registry, seed: SemanticLookasideBuffer | None = None, path: Path | None = None) -> _View:
        slb = SemanticLookasideBuffer(self.embedder, self.weights)
        if seed is not None:
            slb.adopt_rows(seed)  # rows already embedded for another list are reused, not embedded again
        if path is not None:
            slb.open(path, registry)
        else:
            slb.sync(registry)
        return self._view(registry, slb)

    def _view(self, registry: Registry, slb: SemanticLookasideBuffer) -> _View:
        return _View(self, registry, slb)

    def sync(self) -> _View:
        """Bring the index up to date with the registry (only changed tools are embedded); the gate and router
        are rebuilt only when the registry's content changed."""
        with self._lock:
            view = self._main
            if view is None:
                self._main = view = self._build(self.registry, path=self.index_path)
            elif view.registry_hash != self.registry.content_hash():
                stats = view.slb.open(self.index_path, self.registry) if self.index_path else view.slb.sync(self.registry)
                log.info("resync: %d tools embedded, %d reused, %d removed", stats.embedded, stats.reused, stats.removed)
                self._main = view = self._view(self.registry, view.slb)
            return view

    def view(self, tools: Sequence[Mapping[str, Any]] | None = None) -> _View:
        """The facade's own registry (`tools` None), or a request's tool list (OpenAI or MCP form), cached by hash."""
        if tools is None:
            return self.sync()
        if not isinstance(tools, Sequence) or isinstance(tools, (str, bytes)):
            raise RequestError("'tools' must be a list of tool definitions")
        # The key is the list as sent (key order included: an agent resends the same bytes; a reordered copy only
        # costs a new view whose rows are reused). json.dumps without sorting is ~40% cheaper than canonical JSON.
        try:
            digest = hashlib.sha256(json.dumps(list(tools), separators=(",", ":")).encode("utf-8")).hexdigest()
        except (TypeError, ValueError):
            raise RequestError("'tools' must be JSON data") from None
        with self._lock:
            cached = self._views.get(digest)
            if cached is not None:
                self._views.move_to_end(digest)
                return cached
            from nexus.registry.files import read_tools

            try:  # a tool that fails its checks is left out (and reported), not the request
                loaded = read_tools(list(tools), "request", "tools")
            except ToolLoadError as exc:
                raise RequestError(str(exc)) from None
            parsed = loaded.tools
            from nexus.registry.scan import poisoned

            flagged = {t.name: found for t in parsed if (found := poisoned(t))}
            if self.quarantine_requests:  # poisoned tools are neither routed to nor shown to the model
                parsed = [t for t in parsed if t.name not in flagged]
            registry = Registry()
            registry.set_source("request", parsed)
            seed = next(reversed(self._views.values())).slb if self._views else None
            view = self._build(registry, seed)
            view.flagged, view.skipped = flagged, loaded.skipped
            self._views[digest] = view
            while len(self._views) > VIEWS:
                self._views.popitem(last=False)
            return view

    def _router(self, view: _View) -> Router:
        """The view's router with the LLM loaded."""
        router = view.router
        if router.caller.backend is None:
            router = view._router = Router(view.registry, view.slb, router.gate, self.backend, k=self.settings.gate.k,
                                           settings=self.settings)
        return router

    # -- the turn ----------------------------------------------------------------------------------
    def route(self, messages: str | Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None,
              overrides: Overrides = Overrides()) -> Routing:
        """Decide one turn: the conversation is read for follow-ups; the SLB is consulted once."""
        conversation = Conversation.from_messages(messages)
        view = self.view(tools)
        with self._lock:
            return self._route(view, conversation, overrides)

    def _route(self, view: _View, conversation: Conversation, overrides: Overrides) -> Routing:
        registry = view.registry
        if overrides.force_tool is not None:
            key = registry.name_index().get(overrides.force_tool)
            if key is None:
                raise UnknownToolError(f"nexus.force_tool names {overrides.force_tool!r}, which is not among the tools")
            decision = Decision(Action.ROUTE, (Hit(key, 1.0, 1.0, 0.0),), 1.0, 0.0, (float("nan"),))
            return Routing(conversation, decision, registry, reason=f"forced by the request (nexus.force_tool={overrides.force_tool!r})")
        if overrides.disable:
            decision = Decision(Action.FALLBACK, (), 0.0, 0.0)
            return Routing(conversation, decision, registry, reason="routing disabled by the request (nexus.disable); every tool kept")
        decision, slb_ms, gate_ms = view.router.decide(conversation.turn, conversation.history)
        reason = _reason(decision, conversation)
        if overrides.top_k is not None and decision.action is Action.SHORTLIST and len(decision.candidates) > overrides.top_k:
            decision = replace(decision, candidates=decision.candidates[: overrides.top_k],
                               scores=decision.scores[: overrides.top_k])
            reason += f"; shortlist cut to nexus.top_k={overrides.top_k}"
        ranked: tuple[str, ...] = ()
        if decision.action is Action.FALLBACK:  # every tool, best first (the turn's vector is remembered)
            ranked = tuple(view.router._ranked_keys(conversation.turn))
        return Routing(conversation, decision, registry, slb_ms, gate_ms, reason, ranked)

    def respond(self, messages: str | Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None,
                overrides: Overrides = Overrides(), routing: Routing | None = None) -> RoutedTurn:
        """Route and answer one turn with the LLM: a tool call validated against the tool's full schema, or a
        plain answer (NO_TOOL, or a turn whose tool results are already in the conversation). `routing` (this
        turn's `route` result) is used instead of deciding again."""
        conversation = Conversation.from_messages(messages)
        view = self.view(tools)
        with self._lock:
            router = self._router(view)
            if conversation.answered:
                history = (*conversation.exchanges, conversation.current_exchange())
                decision = Decision(Action.NO_TOOL, (), 0.0, 1.0)
                return router.route(conversation.turn, history, decision=decision)
            if routing is None and (overrides.force_tool is not None or overrides.disable or overrides.top_k is not None):
                routing = self._route(view, conversation, overrides)
            decision = routing.decision if routing is not None else None
            return router.route(conversation.turn, conversation.exchanges, decision=decision)

    def respond_turn(self, turn: str, history: Sequence[Any] = ()) -> RoutedTurn:
        """`respond` for a turn and earlier `Exchange`s already in the router's form (the demo's loop)."""
        view = self.sync()
        with self._lock:
            return self._router(view).route(turn, history)

    def warm(self) -> int:
        """Prefill the LLM's fixed prompt header so the first turn starts warm, as every later one does."""
        view = self.sync()
        with self._lock:
            return self._router(view).warm()

    def make_gate(self, slb: SemanticLookasideBuffer, registry: Registry) -> Gate:
        """The gate this facade decides with, for another index (benchmarks build registries of their own)."""
        return self._gate_factory(slb, registry)

    def new_slb(self, keep_fp32: bool = False) -> SemanticLookasideBuffer:
        """An empty index with this facade's embedder and fusion weights."""
        return SemanticLookasideBuffer(self.embedder, self.weights, keep_fp32=keep_fp32)

    # -- MCP ---------------------------------------------------------------------------------------
    @asynccontextmanager
    async def connect(self, servers: Mapping[str, Any], sync: bool = True, quarantine: bool = False,
                      **hub_options: Any) -> AsyncIterator["Nexus"]:
        """Start the MCP servers of an `mcpServers` config, publish their tools (and index them unless `sync` is
        False: the caller adds more sources first, then calls `sync()`); stop the servers on exit.

        `quarantine` leaves out tools `nexus.registry.scan` finds poisoned (listed in `self.quarantined`).
        `hub_options` go to `McpHub` (e.g. `reconnect=True`): then a server's later changes — a re-listed tool
        set, a crash, a restart — are published too (only changed tools are re-embedded) and every callback in
        `self.listeners` is awaited with the server's name.

        >>> async with nexus.connect(load_servers_config("mcp.json")):  # doctest: +SKIP
        ...     print(await nexus.call("get_current_time", {"timezone": "UTC"}))
        """
        from nexus.registry.servers import McpHub

        self._quarantine = quarantine
        hub = McpHub(servers, on_change=self._server_changed, **hub_options)
        self.hub = hub
        try:
            async with hub:
                for name in hub.servers:
                    self._publish(name)
                if sync:
                    self.sync()
                self._connected = True
                yield self
        finally:
            self._connected = False
            self.hub = None

    def _publish(self, server: str) -> bool:
        """A server's last known tools into the registry (quarantined ones left out); True if anything changed.
        A server that is down keeps its tools, marked unavailable by `available`."""
        from nexus.registry.scan import poisoned

        status = self.hub.statuses.get(server) if self.hub else None
        if status is None:
            return False
        tools = []
        for tool in status.tools:
            findings = poisoned(tool) if self._quarantine else []
            if findings:
                if tool.id not in self.quarantined:
                    log.warning("quarantined %s: %s", tool.id, "; ".join(f"{f.why} ({f.text!r})" for f in findings))
                self.quarantined[tool.id] = findings
            else:
                self.quarantined.pop(tool.id, None)
                tools.append(tool)
        if not tools and server not in self.registry.sources():
            return False
        with self._lock:
            return self.registry.set_source(server, tools).changed

    async def _server_changed(self, server: str) -> None:
        if not getattr(self, "_connected", False):
            return  # startup: `connect` publishes every server once, then indexes once
        import anyio

        if self._publish(server):
            await anyio.to_thread.run_sync(self.sync)
        for listener in list(self.listeners):
            await listener(server)

    def available(self, key: str) -> tuple[bool, str | None]:
        """Whether a registry tool can be called now, and why not."""
        tool = self.registry.get(key)
        if self.hub is None or tool.origin not in self.hub.servers:
            return False, f"{tool.origin!r} is not a connected MCP server"
        if self.hub.available(tool.origin):
            return True, None
        status = self.hub.statuses.get(tool.origin)
        return False, str(status.error) if status and status.error else "starting"

    def resolve(self, name: str) -> str:
        """The registry key of a tool name (its key, its own name or its safe alias); UnknownToolError if none."""
        key = self.registry.name_index().get(name)
        if key is None:
            raise UnknownToolError(f"no tool {name!r} in the registry; it is not called")
        return key

    def validate(self, key: str, arguments: Any) -> dict[str, Any]:
        """`arguments` checked against the tool's full JSON Schema (ArgumentsError, naming the first problem)."""
        from nexus.registry.tool import arguments_validator, first_argument_error

        if not isinstance(arguments, Mapping):
            raise ArgumentsError(f"arguments for {key!r} must be a JSON object, got {type(arguments).__name__}")
        try:
            error = first_argument_error(arguments_validator(dict(self.registry.get(key).input_schema)), dict(arguments))
        except NexusError as exc:  # a `$ref` that does not resolve within the schema
            raise NexusError(f"{key!r} is not called: {exc}; its server must fix the schema") from None
        if error:
            raise ArgumentsError(f"arguments for {key!r} rejected: {error}")
        return dict(arguments)

    async def call(self, name: str, arguments: Any = None) -> str:
        """Call a registry tool through its MCP server after validating the arguments against its full schema.
        Never calls anything outside the registry; a server failure is a ServerError with the server's reason."""
        key = self.resolve(name)
        args = self.validate(key, {} if arguments is None else arguments)
        tool: Tool = self.registry.get(key)
        if self.hub is None or tool.origin not in self.hub.servers:
            raise NexusError(f"{key!r} comes from {tool.origin!r}, which is not a connected MCP server")
        return await self.hub.call_tool(tool.origin, tool.name, args)


def _reason(decision: Decision, conversation: Conversation) -> str:
    """Why the gate decided as it did, in words."""
    d = decision
    context = " (read with the earlier turns: a follow-up)" if conversation.history and _follow_up(conversation.turn) else ""
    text = {
        Action.ROUTE: "one tool: the SLB's top score and margin were sure enough to route without the cross-encoder"
        if d.slb_sure else f"one tool: p_top1={d.p_top1:.3f} cleared the ROUTE threshold",
        Action.SHORTLIST: f"{len(d.candidates)} candidates: p_top1={d.p_top1:.3f} too low to route to one",
        Action.FALLBACK: "every tool: the gate could not narrow this turn safely",
        Action.NO_TOOL: f"no tool: p_no_tool={d.p_no_tool:.3f} cleared the NO_TOOL threshold",
    }[d.action]
    return text + context


def _follow_up(turn: str) -> bool:
    from nexus.gate.gate import is_follow_up

    return is_follow_up(turn)
