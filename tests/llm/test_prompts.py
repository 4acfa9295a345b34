"""Prompt building: segments, the cacheable prefix, repair and answer prompts, chat templates."""

from __future__ import annotations

import json

from nexus.llm.base import Prompt
from nexus.llm.prompts import (EXAMPLES, Exchange, PromptBuilder, _example_tools, few_shot, grammar_order, schema_line,
                               signature_line)
from nexus.registry import Tool

WEATHER = Tool("get_weather", "Current weather for a city. Uses a paid API.", {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"},
                   "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                   "days": {"type": "array", "items": {"type": "object", "properties": {
                       "date": {"type": "string", "description": "ISO date"}}, "required": ["date"]}}},
    "required": ["city"]}, "w")


def test_schema_line_carries_every_parameter_and_constraint():
    text = schema_line("get_weather", WEATHER)
    head, *params = text.splitlines()
    assert head == "get_weather(city:str, unit?:c|f, days?:obj[]) Current weather for a city. Uses a paid API."
    assert "  city: City name" in params
    assert '  unit: c|f (one of "c", "f"; default "c")' in params
    assert "    date: ISO date" in params  # nested fields of an array of objects, indented
    assert text.endswith("\n")


def test_tools_prefix_is_a_prefix_of_every_call_prompt():
    builder = PromptBuilder()
    lines = [schema_line("get_weather", WEATHER)]
    prefix = builder.tools_prefix(lines)
    call = builder.call_prompt("weather in Paris?", lines)
    assert call.segments[: len(prefix.segments)] == prefix.segments
    assert call.segments[-2:] == ("Request: weather in Paris?\n", "Tool:")
    # a different turn keeps the same prefix: the prefix cache reuses it
    assert builder.call_prompt("and in Rome?", lines).segments[: len(prefix.segments)] == prefix.segments


def test_a_shortlist_marks_its_lines_isolated_each_its_own_unit():
    lines = [signature_line("get_weather", WEATHER), signature_line("weather_two", WEATHER), signature_line("w3", WEATHER)]
    isolating = PromptBuilder(isolated_lines=True)
    call = isolating.call_prompt("weather in Paris?", lines, blocks=True)
    assert call.isolated and call.blocks == (2, 3, 4) and call.cuts == (2, 3, 4, 5)
    assert isolating.arguments_prompt(call, "w3").isolated  # the arguments continue the same encoding
    # one line (a ROUTE's schema) sits at its anchor: nothing to isolate; prompts without blocks are sequential
    route = isolating.call_prompt("weather in Paris?", lines[:1], blocks=True)
    assert not route.isolated and route.cuts == (2, 3)
    assert not isolating.call_prompt("weather in Paris?", lines).isolated
    plain = PromptBuilder().call_prompt("weather in Paris?", lines, blocks=True)  # the default (D3: off)
    assert not plain.isolated and plain.cuts == (2, 3) and plain.text == call.text


def test_header_examples_are_rendered_like_live_tools():
    header = few_shot()
    assert header.count("Tools:\n") == len(EXAMPLES) and header.endswith("\n\n")
    for _, _, _, tool, arguments in EXAMPLES:  # each example's JSON in the order the grammar writes it
        assert f"Tool: {tool}\nArguments: {json.dumps(grammar_order(_example_tools()[tool].input_schema, arguments))}\n" in header
    assert signature_line("get_weather", WEATHER).startswith("get_weather(")


def test_arguments_and_repair_prompts():
    builder = PromptBuilder()
    call = builder.call_prompt("weather in Paris?", [signature_line("get_weather", WEATHER)])
    args = builder.arguments_prompt(call, "get_weather")
    assert args.text.endswith("Request: weather in Paris?\nTool: get_weather\nArguments:")
    repair = builder.repair_prompt("weather in Paris?", "get_weather", WEATHER, '{"unit": "k"}', "city is required")
    assert "  city: City name" in repair.text  # the full schema of the chosen tool
    assert repair.text.endswith('Arguments: {"unit": "k"}\nError: city is required\nTool: get_weather\nArguments:')


def test_history_and_answer_prompt():
    builder = PromptBuilder()
    history = [Exchange("weather in Paris?", "get_weather", {"city": "Paris"}, result="18 C, sunny")]
    call = builder.call_prompt("and in Rome?", [], history)
    assert 'Tool: get_weather\nArguments: {"city": "Paris"}\nResult: 18 C, sunny\nRequest: and in Rome?\n' in call.text
    answer = builder.answer_prompt("thanks!")
    assert answer.text.endswith("Request: thanks!\nAnswer:") and "Tool:" not in answer.text


def test_chat_template_keeps_tool_lines_as_segments():
    template = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    builder = PromptBuilder(chat_template=template)
    lines = [schema_line("get_weather", WEATHER)]
    prompt = builder.call_prompt("weather in Paris?", lines)
    assert prompt.special
    assert lines[0] in prompt.segments
    assert prompt.text.endswith("<|user|>Request: weather in Paris?<|end|><|assistant|>Tool:")
    assert builder.tools_prefix(lines).segments == prompt.segments[: len(builder.tools_prefix(lines).segments)]
    answer = builder.answer_prompt("hi")
    assert answer.special and answer.text.endswith("<|user|>Request: hi<|end|><|assistant|>Answer:")


def test_grammar_order_puts_required_arguments_first():
    schema = {"properties": {"a": {}, "b": {}, "c": {}}, "required": ["c"]}
    assert list(grammar_order(schema, {"b": 1, "a": 2, "c": 3})) == ["c", "a", "b"]


def test_thousands_separators_are_dropped_from_the_request_only_between_digit_groups():
    segments = PromptBuilder().call_prompt("invest $10,000 for 1,2,3 years; pay 1,234,567", []).segments
    assert segments[-2] == "Request: invest $10000 for 1,2,3 years; pay 1234567\n"
