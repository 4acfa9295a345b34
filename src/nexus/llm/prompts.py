"""Prompts for the LLM path: few-shot completion for base models, the model's chat template when it has one.

Every prompt is a `Prompt` of segments: the fixed header (instructions and few-shot examples, a cacheable
prefix shared by every path), one segment per tool, then the conversation and the turn. The tools block
carries only what the gate chose: the routed tool's full schema (ROUTE), the shortlist's compact
signatures (SHORTLIST), or every full schema (FALLBACK and the full-schema baselines). The examples are
rendered by the same functions as the live tools, so they always look alike.

>>> from nexus.registry import Tool
>>> t = Tool("get_time", "Current time in a timezone.", {"type": "object", "properties": {"tz": {"type": "string",
...          "description": "IANA name"}}, "required": ["tz"]}, "s")
>>> PromptBuilder().call_prompt("time in Paris?", [schema_line("get_time", t)]).segments[-3:]
('get_time(tz:str) Current time in a timezone.\\n  tz: IANA name\\n', 'Request: time in Paris?\\n', 'Tool:')
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping, Sequence

from nexus.llm.base import Prompt
from nexus.llm.stated import THOUSANDS_COMMA
from nexus.registry.tool import Tool
from nexus.signatures import compile_signature
from nexus.signatures.compiler import short_type

MAX_RESULT_CHARS = 300

INSTRUCTIONS = (
    "Each request below is answered by calling one of the listed tools. After \"Tool:\" comes the name of "
    "the tool that fits the request; after \"Arguments:\" its arguments as JSON. Values are copied from the "
    "request word for word, numbers as numbers; a parameter marked ? is optional.\n\n"
)


def _example_tools() -> dict[str, Tool]:
    def obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"type": "object", "properties": props, "required": required}

    def text(description: str = "") -> dict[str, Any]:
        return {"type": "string", "description": description} if description else {"type": "string"}

    def number(description: str, kind: str = "number") -> dict[str, Any]:
        return {"type": kind, "description": description}

    return {
        "get_weather": Tool("get_weather", "Current weather for a city.", obj(
            {"city": text(), "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"]), "examples"),
        "send_email": Tool("send_email", "Send an email.", obj({"to": text(), "subject": text(), "body": text()},
                                                             ["to", "subject"]), "examples"),
        "create_event": Tool("create_event", "Add an event to the calendar.", obj(
            {"title": text(), "date": text(), "time": text()}, ["title", "date"]), "examples"),
        "read_file": Tool("read_file", "Read a text file.", obj(
            {"path": text("Absolute path of the file"),
             "encoding": {"type": "string", "default": "utf-8"}}, ["path"]), "examples"),
        "convert_currency": Tool("convert_currency", "Convert an amount of money from one currency to another.", obj(
            {"amount": number("Amount to convert"),
             "from_currency": text("ISO code, e.g. USD"), "to_currency": text("ISO code, e.g. EUR")},
            ["amount", "from_currency", "to_currency"]), "examples"),
        "book_table": Tool("book_table", "Reserve a table at a restaurant.", obj(
            {"restaurant": text("Name of the restaurant"),
             "city": text("City in the format 'City, State', e.g. 'Austin, TX'"),
             "date": text("Date of the booking, YYYY-MM-DD"), "time": text("Time of the booking, HH:MM (24-hour)"),
             "party_size": number("Number of people", "integer"),
             "outdoor": {"type": "boolean", "description": "Seat outside", "default": False}},
            ["restaurant", "city", "date", "party_size"]), "examples"),
        "search_products": Tool("search_products", "Search the shop's catalogue.", obj(
            {"query": text("Search words"), "max_price": number("Highest price in dollars"),
             "in_stock_only": {"type": "boolean", "description": "Only items in stock", "default": False},
             "sort": {"type": "string", "enum": ["relevance", "price", "rating"], "default": "relevance"},
             "limit": {"type": "integer", "description": "Results to return", "default": 20}},
            ["query"]), "examples"),
        "final_velocity": Tool("final_velocity", "Velocity of an accelerating object after some time.", obj(
            {"initial_velocity": number("Starting velocity in m/s"), "acceleration": number("Acceleration in m/s^2"),
             "time": number("Elapsed time in seconds")}, ["initial_velocity", "acceleration", "time"]), "examples"),
        "world_clock": Tool("world_clock", "Current local time in a time zone.", obj(
            {"timezone": text("IANA time zone name, e.g. 'Europe/Paris'"),
             "format_24h": {"type": "boolean", "description": "24-hour clock", "default": True}},
            ["timezone"]), "examples"),
        "stock_prices": Tool("stock_prices", "Closing prices of stocks.", obj(
            {"symbols": {"type": "array", "items": {"type": "string"}, "description": "Ticker symbols"},
             "period": {"type": "string", "enum": ["1d", "5d", "1mo", "1y"], "default": "5d"}},
            ["symbols"]), "examples"),
    }


# (tools shown, as signatures or full schemas, request, tool, arguments): both views, so one header serves all
# paths. Each shows one habit a small model lacks: values copied whole, optional parameters only when stated,
# numbers matched to the parameter they describe, dates/times/zones/codes in the form the schema asks for.
EXAMPLES = (
    (("get_weather", "send_email", "create_event"), "signature", "What's the weather like in Paris right now, in celsius?",
     "get_weather", {"city": "Paris", "unit": "celsius"}),
    (("read_file",), "schema", "Show me what's in /home/ann/notes/todo.txt", "read_file",
     {"path": "/home/ann/notes/todo.txt"}),
    (("final_velocity",), "schema", "A ball starts at 3 m/s and speeds up at 2 m/s^2 for 10 seconds. How fast is it then?",
     "final_velocity", {"initial_velocity": 3, "acceleration": 2, "time": 10}),
    (("search_products",), "schema", "Find wireless headphones under $80 that are in stock", "search_products",
     {"query": "wireless headphones", "max_price": 80, "in_stock_only": True}),
    (("book_table",), "schema", "Book a table for four at Nopa in San Francisco on March 3rd 2024 at 7:30pm",
     "book_table", {"restaurant": "Nopa", "city": "San Francisco, CA", "date": "2024-03-03", "time": "19:30",
                    "party_size": 4}),
    (("convert_currency",), "schema", "How much is 250 dollars in euros?", "convert_currency",
     {"amount": 250, "from_currency": "USD", "to_currency": "EUR"}),
    (("world_clock",), "schema", "What's the time in Sydney?", "world_clock", {"timezone": "Australia/Sydney"}),
    (("stock_prices",), "schema", "Closing prices of AAPL, MSFT and NVDA please", "stock_prices",
     {"symbols": ["AAPL", "MSFT", "NVDA"]}),
)


# the home folders the examples' paths sit in ("/home/ann"): no request's file is there unless the request says so
_EXAMPLE_HOMES = frozenset("/".join(value.split("/")[:3]) for *_, arguments in EXAMPLES for value in arguments.values()
                           if isinstance(value, str) and value.startswith("/") and value.count("/") >= 3)


def copied_example(arguments: Any, request: str) -> str | None:
    """Why a call must not run when it writes a path from the prompt's examples that the request does not state (None:
    it may): "Show me the two most recent notes." had called `read_file("/home/ann/notes/todo.txt")`, the read_file
    example's path, which is no file of the user's.

    >>> copied_example({"path": "/home/ann/notes/todo.txt"}, "Show me the two most recent notes.")
    "it writes '/home/ann/notes/todo.txt', a path of the prompt's examples the request does not state"
    >>> copied_example({"paths": ["/home/ann/a.txt"]}, "Read /home/ann/a.txt"), copied_example({"path": "a.txt"}, "")
    (None, None)
    """
    values = [arguments] if isinstance(arguments, str) else list(arguments.values()) if isinstance(arguments, Mapping) \
        else list(arguments) if isinstance(arguments, (list, tuple)) else []
    for value in values:
        if not isinstance(value, str):
            found = copied_example(value, request)
            if found:
                return found
        elif any(home in value and home not in (request or "") for home in _EXAMPLE_HOMES):
            return f"it writes {value!r}, a path of the prompt's examples the request does not state"
    return None


ANSWER_SHOT = (  # a greeting and "who are you" too: with two examples "Hi!" ran on, "I'm sorry to hear that…" ×4
    "Each request below gets a short, friendly answer in one sentence from a helpful assistant.\n\n"
    "Request: Hello!\n"
    "Answer: Hello! How can I help you today?\n\n"
    "Request: What is the capital of France?\n"
    "Answer: The capital of France is Paris.\n\n"
    "Request: Who are you?\n"
    "Answer: I'm an assistant: I answer questions and use tools for you.\n\n"
    "Request: Thanks, that's all for now.\n"
    "Answer: You're welcome, glad I could help. Goodbye!\n\n"
)


@lru_cache(maxsize=1)
def few_shot() -> str:
    """The few-shot examples, each ending with a blank line."""
    tools = _example_tools()
    blocks = []
    for keys, view, request, tool, arguments in EXAMPLES:
        render = schema_line if view == "schema" else signature_line
        lines = "".join(render(k, tools[k]) for k in keys)
        blocks.append(f"Tools:\n{lines}Request: {request}\nTool: {tool}\nArguments: "
                      f"{json.dumps(grammar_order(tools[tool].input_schema, arguments))}\n\n")
    return "".join(blocks)


def grammar_order(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments in the order the grammar writes them: required ones first, each group in schema order."""
    props = list(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    rank = {name: (name not in required, i) for i, name in enumerate(props)}
    return dict(sorted(arguments.items(), key=lambda kv: rank.get(kv[0], (True, len(props)))))


@dataclass(frozen=True)
class Exchange:
    """One earlier turn of the conversation, as the prompt shows it."""

    request: str
    tool: str | None = None
    arguments: Mapping[str, Any] | None = None
    result: str | None = None
    answer: str | None = None


def _annotations(schema: Mapping[str, Any]) -> str:
    notes = []
    if isinstance(schema.get("enum"), list):
        notes.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"]))
    for key, label in (("default", "default"), ("format", "format"), ("pattern", "pattern"), ("minimum", "min"),
                       ("maximum", "max"), ("minItems", "min items"), ("maxItems", "max items")):
        if key in schema:
            notes.append(f"{label} {json.dumps(schema[key], ensure_ascii=False)}")
    return f" ({'; '.join(notes)})" if notes else ""


def _parameter_lines(schema: Mapping[str, Any], indent: str, depth: int = 0) -> list[str]:
    """One line per parameter; nested object fields (also of arrays of objects) indented below it."""
    lines = []
    required = set(schema.get("required") or [])
    for name, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, Mapping):
            continue
        mark = "" if depth == 0 or name in required else "?"  # top-level marks are in the signature
        doc = " ".join(str(sub.get("description", "")).split()) or short_type(sub)
        lines.append(f"{indent}{name}{mark}: {doc}{_annotations(sub)}")
        nested = sub.get("items") if isinstance(sub.get("items"), Mapping) else sub
        if depth < 3 and isinstance(nested.get("properties"), Mapping):
            lines += _parameter_lines(nested, indent + "  ", depth + 1)
    return lines


def schema_line(key: str, tool: Tool) -> str:
    """A tool's full schema in compact text: every parameter typed (`?` marks optional ones) and the whole
    description, then one line per parameter with its description and constraints (nested fields indented).
    Every path and baseline shows full schemas this way; the grammar enforces the exact JSON Schema."""
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    params = ", ".join(f"{name}{'' if name in required else '?'}:{short_type(sub)}" for name, sub in props.items())
    description = " ".join(tool.description.split())
    return "\n".join([f"{key}({params}) {description}".rstrip(), *_parameter_lines(tool.input_schema, "  ")]) + "\n"


def signature_line(key: str, tool: Tool) -> str:
    """A tool's compact signature (what a SHORTLIST shows)."""
    return compile_signature(key, tool) + "\n"


def _one_line(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PromptBuilder:
    """Builds call, repair and answer prompts; `chat_template` switches to the model's chat format."""

    def __init__(self, chat_template: str | None = None, bos_token: str = "", eos_token: str = "",
                 isolated_lines: bool = False):
        self.chat_template = chat_template
        self._bos, self._eos = bos_token, eos_token
        # `isolated_lines` (NEXUS_KV_ISOLATED_LINES, `Prompt.isolated`): a ROUTE / SHORTLIST prompt's tool lines encoded
        # independently of each other, each behind the header alone, the request attending to every line
        self.isolated_lines = isolated_lines

    # -- few-shot completion (base models) ---------------------------------------------------------
    @staticmethod
    def _history(history: Sequence[Exchange]) -> list[str]:
        lines = []
        for ex in history:
            lines.append(f"Request: {_one_line(ex.request)}\n")
            if ex.tool:
                lines.append(f"Tool: {ex.tool}\nArguments: {json.dumps(ex.arguments or {}, ensure_ascii=False)}\n")
                if ex.result is not None:
                    lines.append(f"Result: {_one_line(ex.result)}\n")
            elif ex.answer is not None:
                lines.append(f"Answer: {_one_line(ex.answer)}\n")
        return lines

    def call_prompt(self, turn: str, tool_lines: Sequence[str], history: Sequence[Exchange] = (),
                    blocks: bool = False) -> Prompt:
        """The prompt that ends at `Tool:`; the tool name and `Arguments:` follow. `blocks` marks the tool lines
        as segments a backend may fill from compiled KV blocks (computed behind the header: completion prompts)."""
        request = f"Request: {THOUSANDS_COMMA.sub('', ' '.join(turn.split()))}\n"  # JSON numbers have no commas
        if self.chat_template:
            return self._chat(tool_lines, history, request, "Tool:")
        prompt = self.tools_prefix(tool_lines).extend(*self._history(history), request, "Tool:")
        # prefilled in units: the header, then (with `blocks`) the first tool line alone — the units the KV block
        # compiler decodes, so the block at its anchor holds the very bits prefill computes — then the rest in one
        # batch (a batch per line would cost ~1.7x on a 5-line shortlist: each batch streams the weights again)
        if blocks and len(tool_lines) > 1 and self.isolated_lines:
            # every line its own unit, encoded behind the header alone (`Prompt.isolated`), then the rest in one batch
            return replace(prompt, blocks=tuple(range(2, 2 + len(tool_lines))),
                           cuts=tuple(range(2, 3 + len(tool_lines))), isolated=True)
        if blocks and tool_lines:
            return replace(prompt, blocks=tuple(range(2, 2 + len(tool_lines))), cuts=(2, 3))
        return replace(prompt, cuts=(2,))

    def tools_prefix(self, tool_lines: Sequence[str]) -> Prompt:
        """Header and tools block: the part of a call prompt that does not depend on the turn."""
        if self.chat_template:
            return Prompt(self._chat(tool_lines, (), "", "").segments[:-2], special=True)
        return Prompt((INSTRUCTIONS + few_shot(), "Tools:\n", *tool_lines))

    @staticmethod
    def arguments_prompt(call: Prompt, tool_key: str) -> Prompt:
        """`call` continued with the chosen tool, ending at `Arguments:`."""
        return call.extend(f" {tool_key}", "\nArguments:")

    def repair_prompt(self, turn: str, tool_key: str, tool: Tool, bad_arguments: str, error: str,
                      history: Sequence[Exchange] = ()) -> Prompt:
        """Show the chosen tool's full schema, the rejected arguments and why; ask again."""
        call = self.call_prompt(turn, [schema_line(tool_key, tool)], history)
        note = f" {tool_key}\nArguments: {_one_line(bad_arguments, 400)}\nError: {_one_line(error, 200)}\nTool:"
        return self.arguments_prompt(call.extend(note), tool_key)

    def answer_prompt(self, turn: str, history: Sequence[Exchange] = ()) -> Prompt:
        request = f"Request: {' '.join(turn.split())}\n"
        if self.chat_template:
            return self._chat([], history, request, "Answer:")
        return Prompt((ANSWER_SHOT, *self._history(history), request, "Answer:"))

    # -- chat template (instruction-tuned models) --------------------------------------------------
    def _chat(self, tool_lines: Sequence[str], history: Sequence[Exchange], request: str, cue: str) -> Prompt:
        """Render the template around placeholders, then split there so tool lines stay separate segments."""
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        tools_mark, turn_mark = "\ue000TOOLS\ue000", "\ue000TURN\ue000"
        instructions = INSTRUCTIONS.strip() if tool_lines else ANSWER_SHOT.split("\n\n", 1)[0]
        examples = few_shot() if tool_lines else ANSWER_SHOT.split("\n\n", 1)[1]
        system = f"{instructions}\n\nExamples:\n{examples}" + ("Tools:\n" + tools_mark if tool_lines else "")
        messages = [{"role": "user", "content": system.rstrip("\n")}, {"role": "assistant", "content": "Ready."}]
        for ex in history:
            messages.append({"role": "user", "content": ex.request})
            reply = (f"Tool: {ex.tool}\nArguments: {json.dumps(ex.arguments or {})}" if ex.tool
                     else f"Answer: {ex.answer or ''}")
            messages.append({"role": "assistant", "content": reply})
            if ex.tool and ex.result is not None:
                messages.append({"role": "user", "content": f"Result: {_one_line(ex.result)}"})
                messages.append({"role": "assistant", "content": "Noted."})
        messages.append({"role": "user", "content": turn_mark})

        def raise_exception(message: str) -> None:
            raise ValueError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        text = env.from_string(self.chat_template).render(
            messages=messages, add_generation_prompt=True, bos_token=self._bos, eos_token=self._eos,
            raise_exception=raise_exception,
        )
        head, _, rest = text.partition(tools_mark) if tool_lines else ("", "", text)
        middle, _, tail = rest.partition(turn_mark)
        segments = ([head] if head else []) + list(tool_lines) + [middle, request.rstrip("\n"), tail + cue]
        return Prompt(tuple(s for s in segments if s), special=True)
