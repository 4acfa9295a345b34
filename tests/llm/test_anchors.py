"""Values the request ties to one parameter: named choices, numbers next to the parameter's words, identifiers."""

from __future__ import annotations

import pytest

from nexus.llm.anchors import anchored_ids, anchored_names, anchored_numbers, stated_choices
from nexus.llm.grammars import grammar_schema


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


@pytest.mark.parametrize("name, request_text, names", [
    ("branch_name", "Switch /ws/repo to the master branch.", ["master"]),
    ("branch_name", "Check out the release-2.0 branch", ["release-2.0"]),
    ("table_name", "What columns does the notes table have?", ["notes"]),
    ("hotel_name", "a single room at The Plaza hotel.", ["The Plaza"]),   # a capital "The" inside a sentence: the name's
    ("hotel_name", "The Hilton hotel, two nights.", ["Hilton"]),          # at the sentence's start: only "the"
    ("branch_name", "Create a new branch called cleanup.", []),    # no word between "the" and "branch"
    ("branch_name", "Go back to the previous branch.", []),        # "previous" qualifies, it names nothing
    ("team_name", "stats of the Los Angeles Lakers team", []),     # more than one word: not this rule's to cut
    ("museum_name", "opening hours of the Metropolitan Museum of Art", []),  # the name goes on past the noun
    ("museum_name", "opening hours of the Louvre museum of Paris", []),
    ("game_name", "the board game 'Catan'", []),                    # a quote after the noun: the name is quoted
    ("name", "the master branch", []),                             # no noun in the parameter's name
    ("branch", "the master branch", []),                           # not a name parameter
])
def test_names_between_the_and_the_noun(name, request_text, names):
    assert anchored_names(name, request_text) == names


def test_a_branch_the_request_names_is_the_only_one_offered():
    # left free, the 270M model had written the request's repository path as git_checkout's branch_name
    schema = {"type": "object", "required": ["repo_path", "branch_name"],
              "properties": {"repo_path": {"type": "string"}, "branch_name": {"type": "string"}}}
    out = grammar_schema(schema, "Switch /ws/repo to the master branch.")
    assert out["properties"]["branch_name"]["enum"] == ["master"]
    assert "enum" not in grammar_schema(schema, "Switch /ws/repo to a new branch.")["properties"]["branch_name"]


def test_two_name_parameters_of_one_noun_take_neither_of_its_words():
    # "the feature branch" would anchor to source_branch_name and target_branch_name alike: to neither
    schema = {"type": "object", "required": ["source_branch_name", "target_branch_name"],
              "properties": {"source_branch_name": {"type": "string"}, "target_branch_name": {"type": "string"}}}
    out = grammar_schema(schema, "Merge the feature branch into the master branch.")
    assert "enum" not in out["properties"]["source_branch_name"]
    assert "enum" not in out["properties"]["target_branch_name"]


def test_choices_named_in_the_request():
    enum = {"type": "string", "enum": ["interfaces", "status", "statistics"]}
    assert stated_choices(enum, "status of the interface") == ["status"]  # "interface" is not "interfaces"
    listed = {"type": "string", "description": "'Paris' or 'Rome'"}
    assert stated_choices(listed, "from Paris") == ["Paris"]
    assert stated_choices({"type": "string", "description": "e.g. 'Paris'"}, "from Paris") == []  # one example: no list
    assert stated_choices({"type": "string", "description": "e.g. 'Paris'"}, "from Paris", min_listed=1) == ["Paris"]
