"""Live MCP servers: the standard `mcpServers` config, connected through the official `mcp` SDK.

A config names servers the way MCP hosts do:

    {"mcpServers": {"time": {"command": "mcp-server-time", "args": [], "env": {}},
                    "remote": {"url": "http://127.0.0.1:8000/mcp", "type": "streamable-http"}}}

`McpHub` starts every server concurrently, lists its tools (following pagination) and keeps the
sessions open so tools can be called later. A server that is missing, crashes or hangs becomes a
`ServerError` in its `ServerStatus` and contributes no tools; the other servers still load.

>>> specs = parse_servers_config({"mcpServers": {"t": {"command": "mcp-server-time"}}}, "demo.json")
>>> specs["t"].command, specs["t"].args
('mcp-server-time', [])
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nexus.errors import ServerError, ToolLoadError
from nexus.registry.files import LoadedTools, read_json, read_tools
from nexus.registry.registry import Registry, RegistryDiff
from nexus.registry.tables import describes_table, listed, lists_tables, with_tables
from nexus.registry.tool import Tool

STARTUP_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0
log = logging.getLogger(__name__)
MAX_PAGES = 1000  # a server that keeps handing out cursors is broken, not large
MAX_DESCRIBED = 50  # tables whose columns are asked for at connect time; the rest keep any column name
HTTP_KINDS = ("streamable-http", "http", "streamableHttp", "streamable_http")


class StdioServer(BaseModel):
    """A server started as a subprocess that speaks MCP over stdin/stdout."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServer(BaseModel):
    """A running server reached over streamable HTTP."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    type: Literal["streamable-http"] = "streamable-http"


ServerSpec = StdioServer | HttpServer


def parse_servers_config(data: Any, where: str) -> dict[str, ServerSpec]:
    """Validate a parsed `{"mcpServers": {...}}` mapping; errors name `where` and the server."""
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise ToolLoadError(f'{where}: expected a JSON object {{"mcpServers": {{name: server, ...}}}}')
    specs: dict[str, ServerSpec] = {}
    for name, entry in data["mcpServers"].items():
        here = f"{where}: server {name!r}"
        if not name or "/" in name or any(c.isspace() for c in name):
            raise ToolLoadError(f"{here}: a server name must be non-empty, without '/' or spaces")
        if not isinstance(entry, Mapping):
            raise ToolLoadError(f"{here}: must be a JSON object with 'command' (stdio) or 'url' (HTTP)")
        kind = entry.get("type", entry.get("transport"))
        fields = {k: v for k, v in entry.items() if k not in ("type", "transport")}
        try:
            if kind in (None, "stdio") and "command" in entry:
                specs[name] = StdioServer.model_validate(fields)
            elif kind in (None, *HTTP_KINDS) and "url" in entry:
                specs[name] = HttpServer.model_validate(fields)
            elif kind == "sse":
                raise ToolLoadError(f"{here}: the deprecated SSE transport is not supported; use streamable-http")
            else:
                raise ToolLoadError(
                    f"{here}: needs 'command' (stdio) or 'url' with type streamable-http; got type {kind!r}"
                )
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "(entry)"
            raise ToolLoadError(f"{here}: {field}: {err['msg']}") from None
    return specs


def load_servers_config(path: str | Path) -> dict[str, ServerSpec]:
    """Read and validate an mcpServers config file (the format Claude Desktop, Cursor etc. use)."""
    return parse_servers_config(read_json(Path(path)), str(path))


@dataclass(frozen=True)
class ServerStatus:
    """What one server gave: its tools (and the ones left out, each with why), or the error that kept all of them out."""

    name: str
    tools: tuple[Tool, ...] = ()
    error: ServerError | None = None
    seconds: float = 0.0
    skipped: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


def _reason(exc: BaseException) -> str:
    """One line for the first real error inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"cannot start: {exc.strerror or 'not found'}: {exc.filename or exc}"  # command or cwd
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    from mcp import MCPError

    if isinstance(exc, MCPError) and exc.message == "Connection closed":
        return "the server closed the connection (it exited or crashed)"
    return f"{type(exc).__name__}: {exc}"


def _stderr_tail(errlog: Any, lines: int = 5) -> str:
    errlog.flush()
    errlog.seek(0)
    tail = [line for line in errlog.read().splitlines() if line.strip()][-lines:]
    return ("; stderr: " + " | ".join(tail)) if tail else ""


def _result_text(result: Any) -> str:
    """Flatten a CallToolResult's content blocks into the text an LLM (or a person) reads."""
    parts = []
    for block in result.content:
        text = getattr(block, "text", None) or getattr(getattr(block, "resource", None), "text", None)
        parts.append(text if text is not None else f"[{block.type} {getattr(block, 'mime_type', '') or ''}]".strip())
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _hints(raw: Any) -> dict[str, Any] | None:
    """A listed tool's annotations in their wire form (`readOnlyHint`, ...), or None when it has none."""
    annotations = getattr(raw, "annotations", None)
    if annotations is None:
        return None
    return annotations.model_dump(by_alias=True, exclude_none=True) if hasattr(annotations, "model_dump") else None


async def _raw_tool_pages(session: Any, refused: Exception) -> list[Any]:
    """Every page of tools/list as the server sent it, unchecked (`McpHub._list_tools`). It goes through the SDK's
    own request stamping and dispatcher, which are not public API: an SDK without them re-raises `refused`, and the
    server is then left out as before."""
    stamp, dispatcher = getattr(session, "_stamp", None), getattr(session, "_dispatcher", None)
    if stamp is None or not hasattr(dispatcher, "send_raw_request"):
        raise refused
    tools: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        data: dict[str, Any] = {"method": "tools/list", **({"params": {"cursor": cursor}} if cursor else {})}
        opts: dict[str, Any] = {}
        stamp(data, opts)
        page = await dispatcher.send_raw_request("tools/list", data.get("params"), opts)
        if not isinstance(page, Mapping) or not isinstance(page.get("tools"), list):
            raise ToolLoadError(f"tools/list answered {type(page).__name__} without a list of tools")
        tools += page["tools"]
        cursor = page.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            return tools
    raise ToolLoadError(f"tools/list still paginating after {MAX_PAGES} pages")


class McpHub:
    """Open sessions to many MCP servers; list and call their tools.

    With `reconnect`, each server is supervised: one that fails to start, crashes, stops answering pings or
    times out on a call is marked unavailable (its `ServerStatus.error` says why; its last tools stay in
    `tools` so a registry can keep them, marked unavailable) and is restarted with exponential backoff. A
    `notifications/tools/list_changed` from a server re-lists its tools. `on_change(name)` is awaited after
    every change of a server's status or tools.

    >>> async def demo(specs):  # doctest: +SKIP
    ...     async with McpHub(specs) as hub:
    ...         print([t.id for t in hub.tools()])
    ...         print(await hub.call_tool("time", "get_current_time", {"timezone": "UTC"}))
    """

    def __init__(
        self,
        servers: Mapping[str, ServerSpec],
        *,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        call_timeout: float = CALL_TIMEOUT_S,
        reconnect: bool = False,
        backoff_s: float = 1.0,
        backoff_max_s: float = 30.0,
        ping_interval_s: float | None = None,
        on_change: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.servers = dict(servers)
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self.reconnect, self.backoff_s, self.backoff_max_s = reconnect, backoff_s, backoff_max_s
        self.ping_interval_s = ping_interval_s
        self.on_change = on_change
        self.statuses: dict[str, ServerStatus] = {}
        self.restarts: dict[str, int] = {name: 0 for name in self.servers}
        self._sessions: dict[str, Any] = {}
        self._broken: dict[str, Any] = {}
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> McpHub:
        import anyio

        # Each server's transport and session live in their own task: the SDK's task groups and
        # cancel scopes must be exited by the task that entered them, and this lets servers start
        # concurrently and fail independently.
        self._closing = anyio.Event()
        reported = {name: anyio.Event() for name in self.servers}
        self._tg = tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._close_all)
        try:
            for name, spec in self.servers.items():
                tg.start_soon(self._supervise, name, spec, reported[name])
            for event in reported.values():
                await event.wait()
        except BaseException:
            await self._stack.aclose()
            raise
        # Config order, not finishing order.
        self.statuses = {name: self.statuses[name] for name in self.servers}
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stack.__aexit__(*exc_info)

    async def _close_all(self) -> None:
        self._closing.set()
        for event in list(self._broken.values()):
            event.set()

    async def _changed(self, name: str) -> None:
        if self.on_change is not None:
            try:
                await self.on_change(name)
            except Exception:  # noqa: BLE001 - a listener's failure must not stop the supervision
                log.exception("on_change(%s) failed", name)

    def mark_broken(self, name: str, reason: str) -> None:
        """Take a server out of service (its status says why); with `reconnect` it is restarted."""
        old = self.statuses.get(name)
        if name in self._sessions:
            self._sessions.pop(name, None)
            self.statuses[name] = ServerStatus(name, old.tools if old else (), ServerError(f"MCP server {name!r}: {reason}"),
                                               old.seconds if old else 0.0)
            log.warning("MCP server %r unavailable: %s", name, reason)
        event = self._broken.get(name)
        if event is not None:
            event.set()

    async def _supervise(self, name: str, spec: ServerSpec, reported: Any) -> None:
        """Connect, list, serve until closed or broken; with `reconnect`, start again after a backoff."""
        import anyio

        failures = 0
        while not self._closing.is_set():
            good = await self._serve(name, spec, reported)
            failures = 0 if good else failures + 1
            await self._changed(name)
            if not self.reconnect or self._closing.is_set():
                return
            delay = min(self.backoff_max_s, self.backoff_s * 2 ** max(failures - 1, 0))
            log.info("MCP server %r: reconnecting in %.1f s", name, delay)
            with anyio.move_on_after(delay):
                await self._closing.wait()
            self.restarts[name] += 1

    async def _serve(self, name: str, spec: ServerSpec, reported: Any) -> bool:
        """One connection's life; True when it started well (and later broke or closed)."""
        import anyio

        started, seconds = time.monotonic(), 0.0
        self._broken[name] = broken = anyio.Event()
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with AsyncExitStack() as stack:
                    try:
                        session, listed = await self._connect(name, spec, stack, errlog)
                    finally:
                        seconds = time.monotonic() - started  # startup only, not the shutdown after a failure
                    self._sessions[name] = session
                    self.statuses[name] = ServerStatus(name, tuple(listed.tools), None, seconds, tuple(listed.skipped))
                    reported.set()
                    if self.reconnect:
                        await self._changed(name)
                    async with anyio.create_task_group() as watch:
                        if self.ping_interval_s:
                            watch.start_soon(self._pings, name, session, broken)
                        await broken.wait()
                        watch.cancel_scope.cancel()
                    return True  # leaving the stack stops the server (the SDK terminates a stdio process that lingers)
            except Exception as exc:  # noqa: BLE001 - every failure becomes this server's error
                self._sessions.pop(name, None)
                if reported.is_set() and self.statuses.get(name, ServerStatus(name)).ok and self._closing.is_set():
                    return True  # a failure while shutting down after a good start changes nothing
                reason = exc.args[0] if isinstance(exc, ToolLoadError) else _reason(exc)
                old = self.statuses.get(name)
                error = ServerError(f"MCP server {name!r}: {reason}{_stderr_tail(errlog)}")
                self.statuses[name] = ServerStatus(name, old.tools if old else (), error, seconds)
                reported.set()
                return False
        return True

    async def _pings(self, name: str, session: Any, broken: Any) -> None:
        import anyio

        while not broken.is_set():
            await anyio.sleep(self.ping_interval_s)
            try:
                with anyio.fail_after(self.call_timeout):
                    await session.send_ping()
            except Exception as exc:  # noqa: BLE001
                self.mark_broken(name, f"no answer to ping ({_reason(exc) if not isinstance(exc, TimeoutError) else 'timed out'})")
                return

    async def _on_message(self, name: str, message: Any) -> None:
        """A server's notifications: list_changed re-lists its tools; a transport fault breaks the session."""
        if isinstance(message, Exception):
            self.mark_broken(name, _reason(message))
            return
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._tg.start_soon(self.refresh, name)

    async def refresh(self, name: str) -> None:
        """List a server's tools again (after its list_changed) and report the change."""
        import anyio

        session = self._sessions.get(name)
        if session is None:
            return
        try:
            with anyio.fail_after(self.startup_timeout):
                listed = await self._list_tools(name, session)
        except Exception as exc:  # noqa: BLE001 - a bad re-list takes the server out, not the hub
            self.mark_broken(name, f"tools/list after list_changed failed: {exc.args[0] if isinstance(exc, ToolLoadError) else _reason(exc)}")
            return
        old = self.statuses[name]
        self.statuses[name] = ServerStatus(name, tuple(listed.tools), None, old.seconds, tuple(listed.skipped))
        await self._changed(name)

    async def _connect(self, name: str, spec: ServerSpec, stack: AsyncExitStack, errlog: Any) -> tuple[Any, LoadedTools]:
        import anyio
        from mcp import ClientSession

        if isinstance(spec, StdioServer):
            from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

            # The SDK hands servers only a minimal environment (PATH, HOME, ...); the config's env
            # goes on top of it. Merged here too so older SDKs, which replaced it, behave the same.
            env = get_default_environment() | spec.env
            params = StdioServerParameters(command=spec.command, args=spec.args, env=env, cwd=spec.cwd)
            transport = stdio_client(params, errlog=errlog)
        else:
            from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

            client = await stack.enter_async_context(create_mcp_http_client(headers=spec.headers or None))
            transport = streamable_http_client(spec.url, http_client=client)
        read, write = await stack.enter_async_context(transport)

        async def on_message(message: Any) -> None:
            await self._on_message(name, message)

        session = await stack.enter_async_context(ClientSession(read, write, message_handler=on_message))
        step = "initialize"
        try:
            # No task group is entered inside this scope, so leaving it early is safe.
            with anyio.fail_after(self.startup_timeout):
                await session.initialize()
                step = "tools/list"
                listed = await self._list_tools(name, session)
        except TimeoutError:
            raise TimeoutError(f"no answer to {step} within {self.startup_timeout:g} s") from None
        return session, listed

    async def _list_tools(self, name: str, session: Any) -> LoadedTools:
        from mcp_types import PaginatedRequestParams

        mappings: list[Any] = []
        cursor: str | None = None
        try:
            for _ in range(MAX_PAGES):
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                mappings += [{"name": raw.name, "description": raw.description or "", "inputSchema": raw.input_schema,
                              "annotations": _hints(raw)} for raw in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            else:
                raise ToolLoadError(f"tools/list still paginating after {MAX_PAGES} pages")
        except ValidationError as exc:
            # The SDK refuses a whole page for one malformed tool (no name, no inputSchema): read the pages as they
            # came instead, so `read_tools` leaves out only that tool
            log.warning("MCP server %r: tools/list failed the SDK's checks (%s); reading it tool by tool", name,
                        _reason(exc))
            mappings = await _raw_tool_pages(session, exc)
        # one bad tool (a broken schema, a hostile description, a name given twice) is left out, not the server
        return await self._learn_tables(name, session, read_tools(mappings, origin=name, where=f"MCP server {name!r}: tools/list"))

    async def _learn_tables(self, name: str, session: Any, loaded: LoadedTools) -> LoadedTools:
        """The tools with the tables their server's database holds, where one of them lists tables (`registry.tables`):
        the lister is called once; one that fails or names none leaves the tools as they were."""
        lister = next((tool for tool in loaded.tools if lists_tables(tool)), None)
        if lister is None:
            return loaded
        describer = next(((tool, key) for tool in loaded.tools if (key := describes_table(tool))), None)
        tables: dict[str, dict[str, str]] = {}
        try:
            for table in await self._listed(session, lister.name, {}):
                # a describer that fails or names nothing leaves the table's columns unknown (any name)
                described = describer is not None and len(tables) < MAX_DESCRIBED
                tables[table] = await self._listed(session, describer[0].name, {describer[1]: table}) if described else {}
        except Exception as exc:  # noqa: BLE001 - the tables are a help to routing, never a reason to lose the server
            log.warning("MCP server %r: learning its tables failed (%s); they stay unknown", name, _reason(exc))
            return loaded
        log.info("MCP server %r: tables %s (from %s)", name,
                 "; ".join(f"{t} ({', '.join(c) or '?'})" for t, c in tables.items()) or "none", lister.name)
        return replace(loaded, tools=with_tables(loaded.tools, tables))

    @staticmethod
    async def _listed(session: Any, tool: str, arguments: dict[str, Any]) -> dict[str, str]:
        """The names a listing call answers with, and their declared types (`tables.listed`); {} for an error."""
        result = await session.call_tool(tool, arguments)
        return {} if result.is_error else listed(_result_text(result))

    def tools(self) -> list[Tool]:
        """Every tool of every server that loaded, in config order."""
        return [tool for status in self.statuses.values() if status.ok for tool in status.tools]

    def available(self, server: str) -> bool:
        return server in self._sessions

    def load_into(self, registry: Registry) -> dict[str, RegistryDiff]:
        """Publish each loaded server as one registry source (origin = server name)."""
        return {name: registry.set_source(name, s.tools) for name, s in self.statuses.items() if s.ok}

    async def call_tool(self, server: str, tool_name: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Call a tool through its server's MCP session and return the result as text.

        Raises ServerError when the server is not connected, fails, times out, or the tool reports
        an error (`isError`); the message carries the server's text so it can be shown or retried.
        A timeout or a dead connection also takes the server out of service (see `reconnect`).
        """
        import anyio

        session = self._sessions.get(server)
        if session is None:
            status = self.statuses.get(server)
            why = status.error if status and status.error else f"not in this hub ({', '.join(self.servers) or 'none'})"
            raise ServerError(f"cannot call {server}/{tool_name}: {why}")
        try:
            with anyio.fail_after(self.call_timeout):
                result = await session.call_tool(tool_name, dict(arguments or {}))
        except TimeoutError:
            self.mark_broken(server, f"no answer to tools/call {tool_name!r} within {self.call_timeout:g} s")
            raise ServerError(f"MCP server {server!r}: calling {tool_name!r} timed out after {self.call_timeout:g} s") from None
        except Exception as exc:  # noqa: BLE001
            reason = _reason(exc)
            if "closed" in reason or "crashed" in reason:
                self.mark_broken(server, reason)
            raise ServerError(f"MCP server {server!r}: calling {tool_name!r} failed: {reason}") from exc
        text = _result_text(result)
        if result.is_error:
            raise ServerError(f"MCP server {server!r}: tool {tool_name!r} reported an error: {text}")
        return text


def load_servers(servers: Mapping[str, ServerSpec], startup_timeout: float = STARTUP_TIMEOUT_S) -> dict[str, ServerStatus]:
    """Start every server, list its tools, stop it again (sync, for the CLI)."""

    async def run() -> dict[str, ServerStatus]:
        async with McpHub(servers, startup_timeout=startup_timeout) as hub:
            return dict(hub.statuses)

    return asyncio.run(run())


def call_server_tool(spec: ServerSpec, server: str, tool_name: str, arguments: Mapping[str, Any] | None = None) -> str:
    """Start one server, call one tool, stop the server (sync, for the CLI)."""

    async def run() -> str:
        async with McpHub({server: spec}) as hub:
            return await hub.call_tool(server, tool_name, arguments)

    return asyncio.run(run())
