"""`nexus serve mcp`: an MCP server (the official SDK, stdio or streamable HTTP) in front of the downstream servers
of an `mcpServers` config, exposing them through routing.

Its surface is small and fixed: `find_tools(query, history?, top_k?)` returns the gate's decision, p and the kept
tools' signatures and full input schemas (with whether each server is up); `call_tool(name, arguments)` validates
the arguments against the tool's full schema and forwards the call. With `narrow`, `tools/list` also offers the
tools the last `find_tools` kept, callable by name; the gateway then emits `notifications/tools/list_changed`
whenever that set — or a downstream server's tool list — changes.

Downstream: a `notifications/tools/list_changed` re-lists that server and re-embeds only its changed tools; a server
that crashes, hangs or returns garbage is marked unavailable with the reason (find_tools says so, call_tool refuses)
and restarted with exponential backoff; quarantined tools (`nexus registry scan`, high severity) are never listed,
routed to or called.
"""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Mapping

from nexus import __version__
from nexus.config import ServeSettings
from nexus.errors import NexusError, RequestError
from nexus.llm.prompts import signature_line
from nexus.nexus import Nexus, Overrides

log = logging.getLogger(__name__)

FIND_TOOLS = {
    "name": "find_tools",
    "description": "Find the tools for a request among every connected MCP server. Returns the routing decision "
                   "(route: one tool; shortlist: a few; fallback: unsure; no_tool: none applies), its probability, and "
                   "each kept tool's name, signature and input schema. Then call one with call_tool.",
    "inputSchema": {"type": "object", "properties": {
        "query": {"type": "string", "description": "the user's request, in their words"},
        "history": {"type": "array", "items": {"type": "string"}, "description": "earlier user requests, oldest first (for follow-ups)"},
        "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "at most this many tools"}},
        "required": ["query"], "additionalProperties": False},
}
CALL_TOOL = {
    "name": "call_tool",
    "description": "Call a tool find_tools returned, by name, with arguments matching its input schema.",
    "inputSchema": {"type": "object", "properties": {
        "name": {"type": "string", "description": "the tool's name as find_tools gave it"},
        "arguments": {"type": "object", "description": "the tool's arguments"}},
        "required": ["name"], "additionalProperties": False},
}
MAX_FIND = 50


def _hints(tool: Any) -> Any:
    """The upstream server's hints as MCP defines them (the SDK's `ToolAnnotations` drops other keys), passed on so a
    client can decide on them too; None for a tool without any, or with ones of the wrong type (logged)."""
    import mcp_types as types
    from pydantic import ValidationError

    if not tool.annotations:
        return None
    try:
        return types.ToolAnnotations.model_validate(dict(tool.annotations))
    except ValidationError as exc:
        log.warning("tool %s: annotations not passed on (%s)", tool.name, str(exc).splitlines()[0])
        return None


class Gateway:
    """The MCP gateway over a facade. Run it with `serve_stdio()` or mount `http_app()`; `running()` holds the
    downstream connections.

    >>> gateway = Gateway(Nexus.from_settings(), load_servers_config("mcp.json"), ServeSettings())  # doctest: +SKIP
    >>> anyio.run(gateway.serve_stdio)  # doctest: +SKIP
    """

    def __init__(self, nexus: Nexus, servers: Mapping[str, Any], settings: ServeSettings, *, narrow: bool = False,
                 hub_options: Mapping[str, Any] | None = None):
        from mcp.server.lowlevel import Server
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.nexus, self.servers, self.settings, self.narrow = nexus, dict(servers), settings, narrow
        self.hub_options = {"reconnect": True, "ping_interval_s": 10.0, **(hub_options or {})}
        self.surface: tuple[str, ...] = ()              # narrow: the keys the last find_tools kept
        self._sessions: dict[int, Any] = {}              # clients seen on the handshake era, to notify
        self.bus = InMemorySubscriptionBus()
        self.server = Server("nexus-gateway", version=__version__,
                             instructions="Use find_tools to find the tool for a request, then call_tool to call it.",
                             on_list_tools=self._list_tools, on_call_tool=self._call_tool,
                             on_subscriptions_listen=ListenHandler(self.bus))

    # -- lifecycle ---------------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator["Gateway"]:
        """Connect the downstream servers (supervised: reconnect with backoff) and keep them while serving."""
        self.nexus.listeners.append(self._downstream_changed)
        try:
            async with self.nexus.connect(self.servers, quarantine=self.settings.quarantine, **self.hub_options):
                for name, status in self.nexus.hub.statuses.items():
                    if not status.ok:
                        log.warning("%s", status.error)
                yield self
        finally:
            self.nexus.listeners.remove(self._downstream_changed)

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with self.running(), stdio_server() as (read, write):
            await self.server.run(read, write, self._init_options())

    def http_app(self) -> Any:
        """A Starlette app serving MCP at /mcp (streamable HTTP) plus /healthz, behind the security guard."""
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        from nexus.serve.security import Guard

        async def healthz(request: Any) -> Any:
            hub = self.nexus.hub
            return JSONResponse({"status": "ok", "servers": {n: s.ok for n, s in (hub.statuses.items() if hub else [])}})

        app = self.server.streamable_http_app(host=self.settings.host, custom_starlette_routes=[Route("/healthz", healthz)],
                                              max_request_body_size=self.settings.max_body_bytes)
        inner = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(app_: Any) -> AsyncIterator[None]:
            async with self.running(), inner(app_):
                yield

        app.router.lifespan_context = lifespan
        return Guard(app, self.settings.token, self.settings.max_body_bytes)

    def _init_options(self) -> Any:
        from mcp.server.lowlevel.server import NotificationOptions

        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    # -- list_changed --------------------------------------------------------------------------------
    async def _downstream_changed(self, server: str) -> None:
        if self.narrow:
            registry = self.nexus.registry
            kept = tuple(k for k in self.surface if k in registry)
            if kept != self.surface:
                self.surface = kept
            await self._notify()

    async def _notify(self) -> None:
        """Tell every client the tool list changed (modern clients through subscriptions/listen, older ones on
        their session)."""
        from mcp.server.subscriptions import ToolsListChanged

        await self.bus.publish(ToolsListChanged())
        for key, session in list(self._sessions.items()):
            try:
                await session.send_tool_list_changed()
            except Exception:  # noqa: BLE001 - a gone client is not the gateway's failure
                self._sessions.pop(key, None)

    def _seen(self, ctx: Any) -> None:
        session = getattr(ctx, "session", None)
        if session is not None and len(self._sessions) < 10_000:
            self._sessions[id(session)] = session

    # -- handlers ------------------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self._seen(ctx)
        tools = [types.Tool.model_validate(FIND_TOOLS), types.Tool.model_validate(CALL_TOOL)]
        registry = self.nexus.registry
        for key in self.surface:
            if key in registry:
                tool = registry.get(key)
                tools.append(types.Tool(name=key, description=tool.description, input_schema=dict(tool.input_schema),
                                        annotations=_hints(tool)))
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        self._seen(ctx)
        name, arguments = params.name, params.arguments or {}
        try:
            if name == "find_tools":
                return _result(await self.find_tools(arguments))
            if name == "call_tool":
                if not isinstance(arguments.get("name"), str):
                    raise RequestError("call_tool needs 'name' (a tool name from find_tools)")
                return _result(await self.nexus.call(arguments["name"], arguments.get("arguments")))  # None: {}
            if self.narrow and name in self.surface:
                return _result(await self.nexus.call(name, arguments))
            raise RequestError(f"unknown tool {name!r}: this gateway offers find_tools and call_tool")
        except NexusError as exc:
            return _result(str(exc), error=True)

    async def find_tools(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The decision for a query, with every kept tool's signature, schema and availability."""
        import anyio

        query, history, top_k = arguments.get("query"), arguments.get("history") or [], arguments.get("top_k")
        if not isinstance(query, str) or not query.strip():
            raise RequestError("find_tools needs a non-empty 'query'")
        if not isinstance(history, list) or not all(isinstance(h, str) for h in history):
            raise RequestError("'history' must be a list of strings")
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_FIND):
            raise RequestError(f"'top_k' must be an integer from 1 to {MAX_FIND}")
        messages = [{"role": "user", "content": h} for h in history] + [{"role": "user", "content": query}]
        routing = await anyio.to_thread.run_sync(lambda: self.nexus.route(messages, overrides=Overrides(top_k=top_k)))
        kept = routing.kept[: top_k or MAX_FIND]
        registry = self.nexus.registry
        tools = []
        for key in kept:
            tool = registry.get(key)
            up, why = self.nexus.available(key)
            tools.append({"name": key, "server": tool.origin, "signature": signature_line(key, tool).strip(),
                          "description": tool.description, "inputSchema": dict(tool.input_schema), "available": up,
                          **({"unavailable": why} if not up else {})})
        explained = routing.explain()
        result = {"decision": explained["decision"], "p_top1": explained["p_top1"], "p_no_tool": explained["p_no_tool"],
                  "reason": explained["reason"], "tools": tools, "dropped_count": len(routing.dropped)}
        if self.narrow and tuple(kept) != self.surface:
            self.surface = tuple(kept)
            await self._notify()
        return result


def _result(value: Any, error: bool = False) -> Any:
    import mcp_types as types

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured,
                                is_error=error)
