"""A conversation in OpenAI chat form, read the way routing needs it: the turn (the last user message), the earlier
user requests (for follow-ups like "and in Celsius?") and the earlier exchanges (request, call, result).

>>> c = Conversation.from_messages([
...     {"role": "user", "content": "time in Tokyo?"},
...     {"role": "assistant", "tool_calls": [{"id": "1", "type": "function",
...      "function": {"name": "get_time", "arguments": "{\\"timezone\\": \\"Asia/Tokyo\\"}"}}]},
...     {"role": "tool", "tool_call_id": "1", "content": "10:00"},
...     {"role": "assistant", "content": "It is 10:00."},
...     {"role": "user", "content": [{"type": "text", "text": "and in London?"}]}])
>>> c.turn, c.history, c.exchanges[0].tool, c.exchanges[0].result, c.answered
('and in London?', ('time in Tokyo?',), 'get_time', '10:00', False)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nexus.errors import RequestError
from nexus.llm.prompts import Exchange


def message_text(content: Any) -> str:
    """The text of a message's `content`: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content  # a text part without a string text ("text": null) adds nothing
                         if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str))
    raise RequestError(f"message content must be a string or a list of content parts, got {type(content).__name__}")


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Conversation:
    turn: str                             # the last user message
    history: tuple[str, ...] = ()         # earlier user messages, oldest first
    exchanges: tuple[Exchange, ...] = ()  # earlier turns with the call they made and its result
    answered: bool = False                # the turn already has tool results after it (the agent loop's 2nd step)
    results: tuple[str, ...] = ()         # those results, in order

    @classmethod
    def from_messages(cls, messages: str | Sequence[Mapping[str, Any]]) -> "Conversation":
        """Read OpenAI chat messages (or one string, taken as a single user message)."""
        if isinstance(messages, str):
            return cls(messages)
        if not isinstance(messages, Sequence) or not messages:
            raise RequestError("'messages' must be a non-empty list of chat messages")
        turns: list[dict[str, Any]] = []  # one per user message: request, first call, result, answer
        for position, message in enumerate(messages):
            if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
                raise RequestError(f"messages[{position}] must be an object with a 'role'")
            role, text = message["role"], message_text(message.get("content"))
            if role == "user":
                turns.append({"request": text, "tool": None, "arguments": None, "results": [], "answer": None})
            elif not turns:
                continue  # system / developer prompts before the first user message
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                if calls and turns[-1]["tool"] is None and isinstance(calls[0], Mapping):
                    fn = calls[0].get("function") or {}
                    turns[-1]["tool"], turns[-1]["arguments"] = fn.get("name"), _arguments(fn.get("arguments"))
                elif text:
                    turns[-1]["answer"] = text
            elif role in ("tool", "function"):
                turns[-1]["results"].append(text)
        if not turns:
            raise RequestError("the conversation has no user message to route")
        last = turns[-1]
        exchanges = tuple(Exchange(t["request"], t["tool"], t["arguments"], "\n".join(t["results"]) or None, t["answer"])
                          for t in turns[:-1])
        return cls(last["request"], tuple(t["request"] for t in turns[:-1]), exchanges, bool(last["results"]),
                   tuple(last["results"]))

    def current_exchange(self) -> Exchange | None:
        """This turn's own call and result once tools answered it (for a final answer after the results)."""
        return None if not self.answered else Exchange(self.turn, None, None, "\n".join(self.results), None)
