"""Values the request ties to one parameter: named choices, numbers next to the parameter's words, identifiers."""

from __future__ import annotations

import pytest

from nexus.llm.anchors import anchored_ids, anchored_numbers, stated_choices


@pytest.mark.parametrize("name, request_text, numbers", [
    ("num_nights", "a single room for two nights", [2.0]),
    ("number_of_rooms", "a single room for two nights", [1.0]),
    ("number_of_beds", "a 2-bedroom, 1-bathroom house", [2.0]),
    ("dividends_paid", "dividends paid of $200,000", [200000.0]),
    ("shareholder_equity", "net income of $2,000,000, shareholder's equity of $10,000,000", [10000000.0]),
    ("podId", "on node 1200 and pod 3", [3.0]),
    ("interest_rate", "at an interest rate of 8%", [8.0, 0.08]),
    ("outstanding_shares", "100 million outstanding shares", [100000000.0]),
    ("radius", "within 50km of Denver", []),
    ("discount_rate", "cash flows [-500, 1500] discounted at 8%", []),  # "1500] discounted": not next to it      # a unit is not the parameter's word
    ("amount", "the 5 tallest mountains", []),    # nothing names it: the grammar's other rules apply
])
def test_numbers_next_to_a_word_of_the_name(name, request_text, numbers):
    assert anchored_numbers(name, request_text) == numbers


def test_identifiers_follow_the_name_word():
    assert anchored_ids("websiteId", 'Rename website "Frank" to "Bob". Web ID is 1234') == ["1234"]
    assert anchored_ids("customer_id", "orders of customer 5521") == ["5521"]
    assert anchored_ids("person_id", "experiences of Adriel") == []
    assert anchored_ids("location", "id is 1234") == []  # not an identifier parameter


def test_choices_named_in_the_request():
    enum = {"type": "string", "enum": ["interfaces", "status", "statistics"]}
    assert stated_choices(enum, "status of the interface") == ["status"]  # "interface" is not "interfaces"
    listed = {"type": "string", "description": "'Paris' or 'Rome'"}
    assert stated_choices(listed, "from Paris") == ["Paris"]
    assert stated_choices({"type": "string", "description": "e.g. 'Paris'"}, "from Paris") == []  # one example: no list
    assert stated_choices({"type": "string", "description": "e.g. 'Paris'"}, "from Paris", min_listed=1) == ["Paris"]
