"""`nexus serve openai`: an OpenAI-compatible chat endpoint that routes tools.

- **filter** mode forwards each request to an upstream OpenAI-compatible server with `tools` narrowed to the
  gate's choice (one tool on ROUTE, the shortlist, all on FALLBACK, none on NO_TOOL) and returns the upstream's
  answer unchanged (tool names outside the safe character set travel upstream as their alias and are mapped back);
- **route** mode answers with Nexus's own LLM: a standard `tool_calls` message, or a plain one on NO_TOOL.

Per-request control, in the body's `nexus` field (`extra_body={"nexus": {...}}` in the OpenAI client) or headers:
`top_k` / `X-Nexus-Top-K`, `force_tool` / `X-Nexus-Force-Tool`, `disable` / `X-Nexus-Disable: 1`, and `explain`
(adds a `nexus` field with the full account to a non-streamed response). Every response carries `X-Nexus-Decision`,
`X-Nexus-P-Top1`, `X-Nexus-P-No-Tool`, `X-Nexus-Kept` (a JSON list of every kept tool), `X-Nexus-Dropped-Count`,
`X-Nexus-Reason`, `X-Nexus-Route-Ms` (routing work; of it `X-Nexus-SLB-Ms`: the turn's embedding and the scan,
and `X-Nexus-Gate-Ms`), `X-Nexus-Queue-Ms` (waiting for the router) and in route mode `X-Nexus-LLM-Ms`. A request
tool that fails its checks is left out of routing and of what is forwarded, and named in `X-Nexus-Skipped` with why;
only a request with no usable tool at all is refused (400).

Built on Starlette (the ASGI toolkit under FastAPI; small, typed, maintained) served by uvicorn, with httpx for the
upstream — all three already come with llama-cpp-python[server].
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any, AsyncIterator, Mapping

from nexus.config import ServeSettings
from nexus.errors import NexusError, RequestError
from nexus.gate.decision import Action
from nexus.nexus import Nexus, Overrides, Routing

log = logging.getLogger(__name__)
MODES = ("filter", "route")
SKIPPED_CHARS = 200   # of each reason in X-Nexus-Skipped
HEADER_FLAGS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False, "": False}


def _overrides(body: Mapping[str, Any], headers: Mapping[str, str]) -> tuple[Overrides, bool]:
    """(routing overrides, explain) from the `nexus` field and the X-Nexus-* headers (the field wins)."""
    field = body.get("nexus") or {}
    if not isinstance(field, Mapping):
        raise RequestError("'nexus' must be an object: {top_k, force_tool, disable, explain}")
    unknown = set(field) - {"top_k", "force_tool", "disable", "explain"}
    if unknown:
        raise RequestError(f"unknown 'nexus' option(s): {', '.join(sorted(unknown))}; known: top_k, force_tool, disable, explain")
    for key in ("disable", "explain"):  # JSON booleans: the string "false" must not switch anything on
        if field.get(key) is not None and not isinstance(field[key], bool):
            raise RequestError(f"nexus.{key} must be true or false, got {field[key]!r}")
    top_k = field.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
        raise RequestError(f"nexus.top_k must be an integer, got {top_k!r}")
    if top_k is None and headers.get("x-nexus-top-k") is not None:
        try:
            top_k = int(headers["x-nexus-top-k"])
        except ValueError:
            raise RequestError(f"nexus.top_k (X-Nexus-Top-K) must be an integer, got {headers['x-nexus-top-k']!r}") from None
    force = field.get("force_tool", headers.get("x-nexus-force-tool"))
    flag = headers.get("x-nexus-disable", "0").strip().lower()
    if flag not in HEADER_FLAGS:
        raise RequestError(f"X-Nexus-Disable must be one of {', '.join(k for k in HEADER_FLAGS if k)}, got {flag!r}")
    disable = field.get("disable", HEADER_FLAGS[flag])
    if top_k is not None and top_k < 1:
        raise RequestError("nexus.top_k must be at least 1")
    if force is not None and not isinstance(force, str):
        raise RequestError("nexus.force_tool must be a tool name")
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping):  # the client names the function itself
        fn = choice.get("function")
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise RequestError("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                               "{\"type\": \"function\", \"function\": {\"name\": <a tool name>}}")
        force = fn["name"] if force is None else force
    return Overrides(top_k, force, bool(disable) or choice == "none"), bool(field.get("explain", False))


def _check(body: Any, limits: ServeSettings) -> None:
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    messages, tools = body.get("messages"), body.get("tools")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list")
    if len(messages) > limits.max_messages:
        raise RequestError(f"{len(messages)} messages is over the limit of {limits.max_messages} (NEXUS_SERVE_MAX_MESSAGES)")
    for position, message in enumerate(messages):  # earlier calls are read for routing and for what stays offered
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if calls is not None and not (isinstance(calls, list) and all(
                isinstance(c, Mapping) and isinstance(c.get("function"), Mapping) and isinstance(c["function"].get("name"), str)
                for c in calls)):
            raise RequestError(f"messages[{position}].tool_calls must be a list of "
                               "{\"type\": \"function\", \"function\": {\"name\": ..., \"arguments\": ...}}")
    if tools is not None and not isinstance(tools, list):
        raise RequestError("'tools' must be a list")
    if tools and len(tools) > limits.max_tools:
        err = RequestError(f"{len(tools)} tools is over the limit of {limits.max_tools} (NEXUS_SERVE_MAX_TOOLS)")
        err.status = 413
        raise err


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, Mapping):
        fn = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        name = fn.get("name")
        return name if isinstance(name, str) else None
    return None


def _tool_headers(nexus: Nexus, tools: Any, quarantine: bool) -> dict[str, str]:
    """`X-Nexus-Flagged`: the request's tools `nexus registry scan` flags high (a JSON list of names), and whether
    they were quarantined (left out of routing and of what is forwarded); `X-Nexus-Skipped`: the tools that failed
    their checks (no name, a schema that is not JSON Schema, an oversized description...), left out of routing and
    of what is forwarded, each with why (a JSON list, each reason cut at `SKIPPED_CHARS`)."""
    view = nexus.view(tools) if tools else None
    flagged = sorted(view.flagged) if view else []
    out = {"X-Nexus-Flagged": json.dumps(flagged), "X-Nexus-Quarantined": "1" if quarantine else "0"} if flagged else {}
    if view and view.skipped:
        out["X-Nexus-Skipped"] = json.dumps([why[:SKIPPED_CHARS] for why in view.skipped])
    return out


def _headers(routing: Routing | None, timing: Mapping[str, float], note: str = "") -> dict[str, str]:
    """The X-Nexus-* response headers: the decision, its probabilities, every kept tool, why, and the time spent
    waiting for the router (`Queue-Ms`), routing (`Route-Ms`) and, in route mode, in the LLM (`LLM-Ms`)."""
    times = {f"X-Nexus-{name.capitalize() if name != 'llm' else 'LLM'}-Ms": f"{ms:.2f}" for name, ms in timing.items()}
    if routing is None:
        return {"X-Nexus-Decision": "none", "X-Nexus-Reason": note or "the request carries no tools", **times}
    d = routing.decision
    reason = routing.reason + (f"; {note}" if note else "")
    return {"X-Nexus-Decision": d.action.value, "X-Nexus-P-Top1": f"{d.p_top1:.4f}", "X-Nexus-P-No-Tool": f"{d.p_no_tool:.4f}",
            "X-Nexus-Kept": json.dumps(routing.names(routing.kept)),  # ASCII-escaped JSON: header-safe, never cut
            "X-Nexus-Dropped-Count": str(len(routing.dropped)),
            "X-Nexus-Reason": reason.encode("ascii", "backslashreplace").decode(),
            "X-Nexus-SLB-Ms": f"{routing.slb_ms:.2f}", "X-Nexus-Gate-Ms": f"{routing.gate_ms:.2f}", **times}


class _Aliases:
    """Tool names outside the safe set travel upstream as their alias; the answer's names are mapped back."""

    def __init__(self, routing: Routing | None):
        self.to_alias: dict[str, str] = {}
        if routing is not None:
            for key, tool in routing.registry.items():
                if tool.public_name != tool.name:
                    self.to_alias[tool.name] = tool.public_name
        self.to_name = {alias: name for name, alias in self.to_alias.items()}

    def tool(self, tool: dict) -> dict:
        name = _tool_name(tool)
        if name not in self.to_alias:
            return tool
        if isinstance(tool.get("function"), Mapping):
            return {**tool, "function": {**tool["function"], "name": self.to_alias[name]}}
        return {**tool, "name": self.to_alias[name]}

    def _calls(self, calls: Any, table: dict[str, str]) -> Any:
        if not isinstance(calls, list):
            return calls
        out = []
        for call in calls:
            fn = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(fn, Mapping) and fn.get("name") in table:
                call = {**call, "function": {**fn, "name": table[fn["name"]]}}
            out.append(call)
        return out

    def messages(self, messages: list) -> list:
        if not self.to_alias:
            return messages
        return [{**m, "tool_calls": self._calls(m["tool_calls"], self.to_alias)} if isinstance(m, Mapping) and m.get("tool_calls")
                else m for m in messages]

    def answer(self, payload: Any) -> Any:
        """An upstream completion (or one streamed chunk) with alias names mapped back, else unchanged."""
        if not self.to_name or not isinstance(payload, dict):
            return payload
        choices = payload.get("choices")
        for choice in [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []:
            for part in ("message", "delta"):
                if isinstance(choice.get(part), dict) and choice[part].get("tool_calls"):
                    choice[part]["tool_calls"] = self._calls(choice[part]["tool_calls"], self.to_name)
        return payload


def narrowed(body: dict, routing: Routing | None, aliases: _Aliases) -> dict:
    """The request to forward: `tools` cut to the kept ones (request order) plus any the conversation already
    called (their calls and results are in the messages), `tool_choice` and `parallel_tool_calls` dropped with them
    on NO_TOOL, the `nexus` field removed."""
    out = {k: v for k, v in body.items() if k != "nexus"}
    if routing is None:
        return out
    kept = set(routing.names(routing.kept))
    if routing.decision.action is not Action.NO_TOOL:
        # tools the conversation already called stay offered: their calls and results are in the messages
        kept |= {(c.get("function") or {}).get("name") for m in body["messages"] if isinstance(m, Mapping)
                 for c in (m.get("tool_calls") or []) if isinstance(c, Mapping)}
    tools = [aliases.tool(t) for t in body["tools"] if _tool_name(t) in kept]
    if tools:
        out["tools"] = tools
        choice = out.get("tool_choice")
        if isinstance(choice, Mapping) and (choice.get("function") or {}).get("name") in aliases.to_alias:
            out["tool_choice"] = {**choice, "function": {**choice["function"], "name": aliases.to_alias[choice["function"]["name"]]}}
    else:
        for key in ("tools", "tool_choice", "parallel_tool_calls"):
            out.pop(key, None)
    out["messages"] = aliases.messages(body["messages"])
    return out


def completion(routed: Any, routing_names: Mapping[str, str], model: str, stream: bool) -> Any:
    """Route mode: the LLM's call or answer as an OpenAI chat completion (or its SSE chunks)."""
    call = routed.call
    created, ident = int(time.time()), f"chatcmpl-{uuid.uuid4().hex[:24]}"
    if call.tool is not None and call.valid:
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": routing_names[call.tool], "arguments": json.dumps(call.arguments, ensure_ascii=False)}}]}
        finish = "tool_calls"
    else:
        text = call.answer if call.answer is not None else "I could not make a valid tool call: " + "; ".join(call.errors)
        message, finish = {"role": "assistant", "content": text}, "stop"
    if not stream:
        return {"id": ident, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": routed.context_tokens, "completion_tokens": 0, "total_tokens": routed.context_tokens}}
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model}
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
    chunks = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    return [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]


def create_app(nexus: Nexus, settings: ServeSettings) -> Any:
    """The ASGI app (Starlette), wrapped in the security guard. `settings.mode` picks filter or route."""
    import anyio
    import httpx2 as httpx  # the maintained httpx line the mcp SDK and the openai client depend on here
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from nexus.serve.security import Guard

    if settings.mode not in MODES:
        raise NexusError(f"unknown serve mode {settings.mode!r}; choose filter or route")
    nexus.quarantine_requests = settings.quarantine
    if settings.mode == "filter" and not settings.upstream:
        raise NexusError("filter mode needs --upstream URL (an OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1)")
    upstream = (settings.upstream or "").rstrip("/")
    limiter = anyio.CapacityLimiter(1)  # the models are shared: one routing at a time, the rest wait without a thread
    state: dict[str, Any] = {}

    def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

    def upstream_headers(request: Request) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if settings.upstream_key:
            headers["authorization"] = f"Bearer {settings.upstream_key}"
        return headers

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "mode": settings.mode, "upstream": upstream or None})

    async def models(request: Request) -> Response:
        if settings.mode == "filter":
            try:
                answer = await state["client"].get(f"{upstream}/models", headers=upstream_headers(request))
            except httpx.HTTPError as exc:
                return error(502, f"upstream {upstream} unreachable: {exc}", "upstream_error")
            return Response(answer.content, status_code=answer.status_code, media_type="application/json")
        return JSONResponse({"object": "list", "data": [{"id": settings.model_name, "object": "model", "created": 0,
                                                          "owned_by": "nexus"}]})

    async def chat(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as exc:
            return error(400, f"the request body is not JSON: {exc}")
        try:
            _check(body, settings)
            overrides, explain = _overrides(body, request.headers)
            tools = body.get("tools") or None
            if settings.mode == "route":
                return await answer_here(body, tools, overrides, explain)
            routing, timing = None, {}
            if tools:
                routing, timing = await timed(lambda: nexus.route(body["messages"], tools, overrides))
        except RequestError as exc:
            return error(getattr(exc, "status", 400), str(exc))
        return await forward(body, routing, timing, explain)

    async def timed(work: Any) -> tuple[Any, dict[str, float]]:
        """Run routing work in a worker thread, one at a time; (its result, queue and work milliseconds)."""
        queued = time.perf_counter()
        began: list[float] = []

        def run() -> Any:
            began.append(time.perf_counter())
            return work()

        result = await anyio.to_thread.run_sync(run, limiter=limiter)
        return result, {"queue": (began[0] - queued) * 1000, "route": (time.perf_counter() - began[0]) * 1000}

    async def answer_here(body: dict, tools: Any, overrides: Overrides, explain: bool) -> Response:
        def run() -> tuple[Any, Routing | None, float]:
            start = time.perf_counter()
            routing = nexus.route(body["messages"], tools, overrides) if tools else None
            routed = nexus.respond(body["messages"], tools or [], overrides, routing=routing)
            return routed, routing, (time.perf_counter() - start) * 1000

        (routed, routing, total), timing = await timed(run)
        names = {key: tool.name for key, tool in (routing.registry.items() if routing else [])}
        timing = {"queue": timing["queue"], "route": total - routed.timings.llm_ms, "llm": routed.timings.llm_ms}
        headers = _headers(routing, timing) | _tool_headers(nexus, tools, settings.quarantine)
        payload = completion(routed, names, settings.model_name, bool(body.get("stream")))
        if body.get("stream"):
            return StreamingResponse(iter(payload), media_type="text/event-stream", headers=headers)
        if explain and routing is not None:
            payload["nexus"] = routing.explain()
        return JSONResponse(payload, headers=headers)

    async def forward(body: dict, routing: Routing | None, timing: dict[str, float], explain: bool) -> Response:
        aliases = _Aliases(routing)
        out = narrowed(body, routing, aliases)
        headers = _headers(routing, timing) | _tool_headers(nexus, body.get("tools"), settings.quarantine)
        client: httpx.AsyncClient = state["client"]
        url = f"{upstream}/chat/completions"
        request = client.build_request("POST", url, json=out, headers=upstream_headers(None))
        try:
            answer = await client.send(request, stream=bool(body.get("stream")))
        except httpx.HTTPError as exc:
            return error(502, f"upstream {upstream} failed: {type(exc).__name__}: {exc}", "upstream_error")
        if not body.get("stream"):
            content = answer.content
            if answer.status_code == 200 and (aliases.to_name or (explain and routing is not None)):
                try:
                    payload = aliases.answer(answer.json())
                except ValueError:
                    return error(502, f"upstream {upstream} answered 200 with a body that is not JSON: {content[:200]!r}",
                                 "upstream_error")
                if explain and routing is not None and isinstance(payload, dict):
                    payload["nexus"] = routing.explain()
                content = json.dumps(payload, ensure_ascii=False).encode()
            return Response(content, status_code=answer.status_code,
                            media_type=answer.headers.get("content-type", "application/json"), headers=headers)

        async def relay() -> AsyncIterator[bytes]:
            try:
                if not aliases.to_name:
                    async for chunk in answer.aiter_raw():
                        yield chunk
                    return
                async for line in answer.aiter_lines():  # rewrite alias names in each SSE data line
                    if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                        try:
                            line = "data: " + json.dumps(aliases.answer(json.loads(line[6:])), ensure_ascii=False)
                        except ValueError:
                            pass
                    yield (line + "\n").encode()
            finally:
                await answer.aclose()

        return StreamingResponse(relay(), status_code=answer.status_code,
                                 media_type=answer.headers.get("content-type", "text/event-stream"), headers=headers)

    async def lifespan(app: Any) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
        async with httpx.AsyncClient(timeout=settings.upstream_timeout_s, limits=limits) as client:
            state["client"] = client
            yield

    from contextlib import asynccontextmanager

    app = Starlette(routes=[Route("/healthz", healthz), Route("/v1/models", models),
                            Route("/v1/chat/completions", chat, methods=["POST"])],
                    lifespan=asynccontextmanager(lifespan))
    return Guard(app, settings.token, settings.max_body_bytes)
