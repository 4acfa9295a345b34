"""What both servers enforce before a request reaches routing: a bearer token (when set), a body-size limit that
holds even without Content-Length, and a loopback-only bind unless a token protects the server.

ASGI middleware (Starlette's interface, no framework magic), so the same checks wrap the OpenAI proxy and the MCP
gateway's streamable-HTTP app.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from typing import Any, Awaitable, Callable

from nexus.errors import ConfigError

log = logging.getLogger(__name__)
Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]
OPEN_PATHS = ("/healthz",)  # liveness probes need no token and reveal nothing but "ok"


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts local connections.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token: anyone who can reach the port could call every tool."""
    if not is_loopback(host) and not token:
        raise ConfigError(f"refusing to bind {host}: a non-loopback address needs a bearer token "
                          "(set NEXUS_SERVE_TOKEN or --token), or bind 127.0.0.1")


async def _error(send: Callable[[dict], Awaitable[None]], status: int, message: str, kind: str,
                 headers: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Bearer-token check and body-size limit around an ASGI app.

    A body over `max_body_bytes` is refused with 413 before the app sees any of it (Content-Length is checked up
    front; a chunked body is counted as it arrives and the app is never called)."""

    def __init__(self, app: ASGIApp, token: str | None, max_body_bytes: int):
        self.app, self.token, self.max_body_bytes = app, token, max_body_bytes

    def _authorised(self, scope: Scope) -> bool:
        if not self.token or scope.get("path") in OPEN_PATHS:
            return True
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[dict]], send: Callable[[dict], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._authorised(scope):
            await _error(send, 401, "missing or wrong bearer token (Authorization: Bearer <NEXUS_SERVE_TOKEN>)",
                         "authentication_error", [(b"www-authenticate", b"Bearer")])
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_body_bytes
            except ValueError:
                await _error(send, 400, "Content-Length is not a number", "invalid_request_error")
                return
            if too_big:
                await _error(send, 413, f"request body of {int(declared):,} bytes is over the {self.max_body_bytes:,}-byte "
                             "limit (NEXUS_SERVE_MAX_BODY_BYTES)", "invalid_request_error")
                return
        if scope.get("method") in ("POST", "PUT", "PATCH") and declared is None:
            # Chunked: read it all here, within the limit, then replay it to the app.
            chunks, size = [], 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body_bytes:
                    await _error(send, 413, f"request body is over the {self.max_body_bytes:,}-byte limit "
                                 "(NEXUS_SERVE_MAX_BODY_BYTES)", "invalid_request_error")
                    return
                chunks.append(chunk)
                if not message.get("more_body"):
                    break
            body, replayed = b"".join(chunks), False

            async def replay() -> dict:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)
