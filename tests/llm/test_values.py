"""Value normalisation after decoding: zones, dates, times, enum spelling; unstated optional arguments dropped."""

from __future__ import annotations

from datetime import date

import pytest

from nexus.llm.values import (is_zone_parameter, normalise_arguments, normalise_value, stated, to_hh_mm, to_iso_date,
                              to_zone, value_format)

ZONE = {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')."}


@pytest.mark.parametrize("value, zone", [
    ("Tokyo", "Asia/Tokyo"), ("new york", "America/New_York"), ("New_York", "America/New_York"),
    ("London time", "Europe/London"), ("America/Tokyo", "Asia/Tokyo"), ("Europe/Paris", "Europe/Paris"),
    ("PST", "America/Los_Angeles"), ("UTC", "UTC"), ("San Francisco", "America/Los_Angeles"), ("Japan", "Asia/Tokyo"),
])
def test_zones_become_iana_names(value, zone):
    assert to_zone(value) == zone


def test_an_unknown_place_is_left_for_the_validator_and_server():
    assert to_zone("Atlantis") is None
    assert normalise_value("timezone", ZONE, "Atlantis") == "Atlantis"


def test_zone_parameters_are_recognised_by_name_or_description_not_by_tool():
    assert is_zone_parameter("source_timezone", {"type": "string"})
    assert is_zone_parameter("tz", {"type": "string"})
    assert is_zone_parameter("target_zone", ZONE)
    assert not is_zone_parameter("city", {"type": "string", "description": "A city"})
    assert not is_zone_parameter("timezone", {"type": "string", "enum": ["UTC", "CET"]})  # the enum decides


@pytest.mark.parametrize("value, iso", [
    ("April 25th 2023", "2023-04-25"), ("25 April, 2023", "2023-04-25"), ("2023.11.15", "2023-11-15"),
    ("2023/1/5", "2023-01-05"), ("Dec. 10, 2022", "2022-12-10"), ("2023-02-30", None), ("next week", None),
])
def test_dates_become_iso(value, iso):
    assert to_iso_date(value) == iso


def test_a_date_without_a_year_takes_this_year():
    assert to_iso_date("March 7th", today=date(2031, 1, 1)) == "2031-03-07"


@pytest.mark.parametrize("value, hhmm", [
    ("5:30pm", "17:30"), ("5:30 PM", "17:30"), ("12 am", "00:00"), ("12pm", "12:00"), ("9 a.m.", "09:00"),
    ("17:30:00", "17:30"), ("noon", "12:00"), ("25:00", None), ("5", None), ("08:15 Tokyo", "08:15"),
    ("at 5pm sharp", "17:00"), ("route 66", None),
])
def test_times_become_24_hour(value, hhmm):
    assert to_hh_mm(value) == hhmm


def test_formats_come_from_the_schema_or_its_description():
    assert value_format({"type": "string", "format": "date"}) == "date"
    assert value_format({"type": "string", "description": "in the format of 'YYYY-MM-DD'"}) == "date"
    assert value_format({"type": "string", "description": "24-hour format (HH:MM)"}) == "time"
    assert value_format({"type": "string", "description": "'YYYY-MM-DD HH:MM:SS'"}) is None  # a timestamp: not ours
    assert value_format({"type": "integer", "description": "YYYY-MM-DD"}) is None
    assert normalise_value("show_time", {"type": "string", "description": "HH:MM"}, "5:30pm") == "17:30"
    assert normalise_value("when", {"type": "string", "description": "YYYY-MM-DD"}, "April 3rd 2023") == "2023-04-03"
    assert normalise_value("note", {"type": "string"}, "5:30pm") == "5:30pm"  # no format asked: untouched


def test_enum_values_take_the_schema_spelling():
    schema = {"type": "string", "enum": ["Family Counselor", "Psychologist"]}
    assert normalise_value("type", schema, "family counselor") == "Family Counselor"
    assert normalise_value("type", schema, "Dentist") == "Dentist"  # not an option: the validator says so


@pytest.mark.parametrize("name, value, request_text, expected", [
    ("location", "Letterkenny, Ireland", "closest stores near Letterkenny,Ireland please", True),
    ("sort_order", "descending", "which alarms are set for user 789", False),
    ("limit", 10, "show ten results", True),
    ("rate", 0.08, "a return of 8% a year", True),
    ("page_size", 3, "10 entries per page", False),
    ("include_stats", True, "Include its statistics", True),
    ("include_disabled", False, "which alarms are set", False),
    ("recursive", True, "list all files", False),
    ("genre", "Family", "a family-friendly movie", True),
    ("cuisine", ["Thai", "Vietnamese"], "Thai food tonight", True),
])
def test_stated_values(name, value, request_text, expected):
    assert stated(name, value, request_text) is expected


def test_unstated_optional_arguments_are_dropped_required_ones_kept():
    schema = {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]},
        "include_wind": {"type": "boolean"}}, "required": ["city", "days"]}
    out = normalise_arguments({"city": "Oslo", "days": 9, "unit": "f", "include_wind": True}, schema,
                              "Forecast for Oslo for 3 days, with wind")
    assert out == {"city": "Oslo", "days": 9, "include_wind": True}  # a wrong required value stays for the validator
    kept = normalise_arguments({"city": "Oslo", "days": 3, "unit": "f"}, schema, "Forecast for Oslo", drop_unstated=False)
    assert kept["unit"] == "f"
