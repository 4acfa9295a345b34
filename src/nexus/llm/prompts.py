"""Prompts for the LLM path: few-shot completion for base models, the model's chat template when it has one.

Every prompt is a `Prompt` of segments: the fixed header (the few-shot examples, a cacheable prefix shared
by every path), one segment per tool line, then the conversation and the turn. The tools block carries
only what the gate chose: the routed tool's full schema (ROUTE), the shortlist's compact signatures
(SHORTLIST), or every full schema (FALLBACK and the full-schema baselines).

>>> from nexus.registry import Tool
>>> t = Tool("get_time", "Current time in a timezone.", {"type": "object", "properties": {"tz": {"type": "string"}}}, "s")
>>> p = PromptBuilder().call_prompt("time in Paris?", [schema_line("get_time", t)])
>>> p.segments[-3:]
('{"name": "get_time", "description": "Current time in a timezone.", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": []}}\\n', 'Request: time in Paris?\\n', 'Tool:')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nexus.llm.base import Prompt
from nexus.registry.tool import Tool
from nexus.signatures import compile_signature

MAX_RESULT_CHARS = 300

# The examples show both tool views (signatures and a full schema) so one header serves every path.
FEW_SHOT = (
    "Each request below is answered by calling one of the listed tools. After \"Tool:\" comes the name of "
    "the tool that fits the request; after \"Arguments:\" its arguments as JSON, with values taken from "
    "the request and only parameters the tool defines.\n\n"
    "Tools:\n"
    "get_weather(city:str, unit?:celsius|fahrenheit) Current weather for a city\n"
    "send_email(to:str, subject:str, body?:str) Send an email\n"
    "create_event(title:str, date:str, time?:str) Add an event to the calendar\n"
    "Request: What's the weather like in Paris right now, in celsius?\n"
    "Tool: get_weather\n"
    'Arguments: {"city": "Paris", "unit": "celsius"}\n\n'
    "Tools:\n"
    '{"name": "convert_currency", "description": "Convert an amount of money from one currency to another.", '
    '"parameters": {"type": "object", "properties": {"amount": {"type": "number", "description": "Amount to '
    'convert"}, "from_currency": {"type": "string", "description": "ISO code, e.g. USD"}, "to_currency": '
    '{"type": "string", "description": "ISO code, e.g. EUR"}}, "required": ["amount", "from_currency", '
    '"to_currency"]}}\n'
    "Request: How much is 250 dollars in euros?\n"
    "Tool: convert_currency\n"
    'Arguments: {"amount": 250, "from_currency": "USD", "to_currency": "EUR"}\n\n'
)

ANSWER_SHOT = (
    "Each request below gets a short, helpful answer in one sentence.\n\n"
    "Request: What is the capital of France?\n"
    "Answer: The capital of France is Paris.\n\n"
    "Request: Thanks, that's all for now.\n"
    "Answer: You're welcome, glad I could help.\n\n"
)


@dataclass(frozen=True)
class Exchange:
    """One earlier turn of the conversation, as the prompt shows it."""

    request: str
    tool: str | None = None
    arguments: Mapping[str, Any] | None = None
    result: str | None = None
    answer: str | None = None


def schema_line(key: str, tool: Tool) -> str:
    """A tool's full schema on one line (what the full-schema baselines and FALLBACK show)."""
    schema = dict(tool.input_schema)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    body = {"name": key, "description": " ".join(tool.description.split()), "parameters": schema}
    return json.dumps(body, ensure_ascii=False) + "\n"


def signature_line(key: str, tool: Tool) -> str:
    """A tool's compact signature (what a SHORTLIST shows)."""
    return compile_signature(key, tool) + "\n"


def _one_line(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PromptBuilder:
    """Builds call, repair and answer prompts; `chat_template` switches to the model's chat format."""

    def __init__(self, chat_template: str | None = None, bos_token: str = "", eos_token: str = ""):
        self.chat_template = chat_template
        self._bos, self._eos = bos_token, eos_token

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

    def call_prompt(self, turn: str, tool_lines: Sequence[str], history: Sequence[Exchange] = ()) -> Prompt:
        """The prompt that ends at `Tool:`; the tool name and `Arguments:` follow."""
        request = f"Request: {' '.join(turn.split())}\n"
        if self.chat_template:
            return self._chat(tool_lines, history, request, "Tool:")
        return Prompt((FEW_SHOT, "Tools:\n", *tool_lines, *self._history(history), request, "Tool:"))

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
        instructions = FEW_SHOT.split("\n\n", 1)[0] if tool_lines else ANSWER_SHOT.split("\n\n", 1)[0]
        examples = FEW_SHOT.split("\n\n", 1)[1] if tool_lines else ANSWER_SHOT.split("\n\n", 1)[1]
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
