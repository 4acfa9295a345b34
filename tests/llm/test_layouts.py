"""Dates in the layout a description spells out (MM/DD/YYYY and the like), with a year only when it is known."""

from __future__ import annotations

import pytest

from nexus.llm.grammars import grammar_schema
from nexus.llm.layouts import date_layout, to_layout
from nexus.llm.values import normalise_arguments

MDY = {"type": "string", "description": "The date of the journey, in the format 'MM/DD/YYYY' (e.g., '04/23/2023')."}


@pytest.mark.parametrize("description, layout", [
    ("in the format 'MM/DD/YYYY'", "%m/%d/%Y"), ("format DD-MM-YYYY", "%d-%m-%Y"), ("YYYY/MM/DD", "%Y/%m/%d"),
    ("in the format YYYY-MM-DD", None), ("a date", None),  # YYYY-MM-DD is `nexus.llm.formats`' own
])
def test_layouts_come_from_the_description(description, layout):
    assert date_layout({"type": "string", "description": description}) == layout


@pytest.mark.parametrize("value, request_text, out", [
    ("May 15th", "from May 15th to May 22nd, 2023", "05/15/2023"),  # the year of the request's same date
    ("2023-03-13", "on March 13th 2023", "03/13/2023"),
    ("04/23/2023", "on April 23rd 2023", "04/23/2023"),
    ("March 13th", "on March 13th", "March 13th"),                  # no year known: not guessed
])
def test_dates_are_written_in_the_layout(value, request_text, out):
    assert to_layout(value, "%m/%d/%Y", request_text) == out


def test_layout_dates_in_calls_and_grammars():
    schema = {"type": "object", "properties": {"check_in": MDY, "check_out": MDY}, "required": ["check_in"]}
    request_text = "a house from May 15th to May 22nd, 2023"
    assert normalise_arguments({"check_in": "May 15th", "check_out": "May 22nd"}, schema, request_text) == \
        {"check_in": "05/15/2023", "check_out": "05/22/2023"}  # the optional one is stated, so kept
    shaped = grammar_schema(schema, request_text)
    assert shaped["properties"]["check_in"]["enum"] == ["05/15/2023", "05/22/2023"]
    assert shaped["required"] == ["check_in", "check_out"]  # an optional date the request states is written
