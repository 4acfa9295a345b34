"""Currencies named in a request, as ISO codes, narrow a currency parameter's grammar."""

from __future__ import annotations

from nexus.llm.currencies import is_currency_parameter, request_currencies
from nexus.llm.grammars import grammar_schema


def test_currency_names_codes_and_symbols_in_the_order_named():
    assert request_currencies("Convert 150 Euros to Canadian dollars") == ["EUR", "CAD"]
    assert request_currencies("rate from Euro to Dollar") == ["EUR", "USD"]
    assert request_currencies("$5000 in GBP") == ["USD", "GBP"]
    assert request_currencies("what does ABC stand for") == []


def test_a_required_currency_parameter_takes_the_named_currencies():
    schema = {"type": "object", "properties": {"amount": {"type": "number"}, "from_currency": {"type": "string"},
                                               "to_currency": {"type": "string"}, "note": {"type": "string"}},
              "required": ["amount", "from_currency", "to_currency", "note"]}
    props = grammar_schema(schema, "Convert 150 Euros to Canadian dollars")["properties"]
    # each side gets the one the request puts there (`nexus.llm.directions`): after its cue, or for the source, the
    # one the amount is written in; a pair it does not place gets both
    assert props["from_currency"]["enum"] == ["EUR"] and props["to_currency"]["enum"] == ["CAD"]
    props = grammar_schema(schema, "Compare 150 Euros and Canadian dollars")["properties"]
    assert props["from_currency"]["enum"] == ["EUR"] and props["to_currency"]["enum"] == ["CAD"]
    props = grammar_schema(schema, "Compare Euros and Canadian dollars")["properties"]
    assert props["from_currency"]["enum"] == props["to_currency"]["enum"] == ["EUR", "CAD"]
    assert "enum" not in props["note"] and not is_currency_parameter("note", {"type": "string"})
    assert "enum" not in grammar_schema(schema, "convert my money")["properties"]["from_currency"]  # none named


def test_a_required_list_has_at_least_one_item():
    schema = {"type": "object", "properties": {"data": {"type": "array", "items": {"type": "number"}},
                                               "years": {"type": "array", "items": {"type": "integer"}}},
              "required": ["data"]}
    props = grammar_schema(schema, "a histogram of 85, 90, 88")["properties"]
    assert props["data"]["minItems"] == 1 and "minItems" not in props["years"]
