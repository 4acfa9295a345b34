"""A scripted OpenAI-compatible upstream: answers at once, calling the first tool it was offered (or with a plain
message when offered none), streamed or not. It says what it received in an extra `offered` field (the tool names)
so tests can see what the proxy forwarded; `nexus bench serve` uses it so that Nexus, not an LLM, is measured.

    python -m nexus.serve.scripted --port 8001
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any


def reply(body: dict[str, Any]) -> dict[str, Any]:
    tools = body.get("tools") or []
    names = [(t.get("function") or t).get("name") for t in tools if isinstance(t, dict)]
    if names and body.get("tool_choice") != "none":
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": names[0], "arguments": "{}"}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": f"scripted answer to {len(body.get('messages') or [])} messages"}, "stop"
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "offered": names}


def create_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def chat(request: Request) -> Response:
        body = await request.json()
        answer = reply(body)
        if not body.get("stream"):
            return JSONResponse(answer)
        message, finish = answer["choices"][0]["message"], answer["choices"][0]["finish_reason"]
        base = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
        chunks = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}], "offered": answer["offered"]},
                  {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
        lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        return StreamingResponse(iter(lines), media_type="text/event-stream")

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "test"}]})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    uvicorn.run(create_app(), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
