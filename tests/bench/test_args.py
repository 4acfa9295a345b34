"""`nexus bench args`: the error categories agree with BFCL's allowed-values rules; the dev split drops tools the test
split holds; and (slow) the bundled model's argument accuracy on the test split, which nothing was tuned on."""

from __future__ import annotations

import json

import pytest

from nexus.bench.args import argument_errors, exclude_queries, run_args
from nexus.bench.latency import args_match
from nexus.registry import Tool

BOOK = Tool("book_bus", "Buy bus tickets.", {"type": "object", "properties": {
    "from_city": {"type": "string", "description": "'City, State'"},
    "date": {"type": "string", "description": "YYYY-MM-DD"},
    "seats": {"type": "integer"}, "luggage": {"type": "boolean"},
    "class": {"type": "string", "enum": ["economy", "business"]},
    "stops": {"type": "array", "items": {"type": "string"}}}, "required": ["from_city", "date"]}, "t")
REQUEST = "Two economy bus tickets from San Francisco on March 7th 2023, stopping in Fresno, with luggage"
ALLOWED = {"from_city": ["San Francisco, CA"], "date": ["2023-03-07"], "seats": [2], "luggage": [True],
           "class": ["", "economy"], "stops": [["Fresno"]]}


@pytest.mark.parametrize("predicted, expected", [
    ({"from_city": "San Francisco, CA", "date": "2023-03-07", "seats": 2, "luggage": True, "stops": ["Fresno"]}, []),
    ({"from_city": "San Francisco", "date": "2023-03-07", "seats": 2, "luggage": True, "stops": ["Fresno"]},
     [("from_city", "inferred_value")]),
    ({"from_city": "San Francisco, CA", "date": "2023-03-08", "seats": "2", "luggage": False, "stops": ["Fresno"]},
     [("date", "date_time_format"), ("seats", "type_mismatch"), ("luggage", "boolean_value")]),
    ({"from_city": "San Francisco, CA", "date": "2023-03-07", "seats": 3, "luggage": True, "class": "business",
      "stops": ["Fresno", "LA"]}, [("seats", "number_value"), ("class", "enum_value"), ("stops", "structured_value")]),
    ({"from_city": "San Francisco, CA", "date": "2023-03-07"}, [("seats", "missing_stated"), ("luggage", "missing_stated"),
                                                               ("stops", "missing_stated")]),
    ({"date": "2023-03-07", "seats": 2, "luggage": True, "stops": ["Fresno"], "vip": True},
     [("vip", "unknown_parameter"), ("from_city", "missing_required")]),
    (None, [("", "no_valid_call")]),
])
def test_error_categories_follow_the_allowed_values_rules(predicted, expected):
    errors = argument_errors(REQUEST, BOOK, predicted, ALLOWED)
    assert errors == expected
    assert (errors == []) == args_match(predicted, ALLOWED)  # no error exactly when BFCL's rule accepts the call


def test_a_copied_string_and_an_unstated_optional_value():
    allowed = {"query": ["closest Tesco stores"], "limit": ["", 5]}
    tool = Tool("stores", "", {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                                                                "radius": {"type": "integer"}}}, "t")
    assert argument_errors("find the closest Tesco stores", tool, {"query": "Tesco"}, allowed) == [("query", "copy_value")]
    assert argument_errors("find the closest Tesco stores", tool, {"query": "closest Tesco stores", "radius": 5},
                           {**allowed, "radius": [""]}) == [("radius", "unstated_optional")]


def test_dev_split_drops_queries_on_tools_the_test_split_holds():
    test = [Tool("Movies_1_FindMovies", "Find movies.", {"type": "object"}, "t")]
    pool = [Tool("Movies_3_FindMovies", "Other text.", {"type": "object"}, "d"),   # same SGD family
            Tool("find_films", "find movies.", {"type": "object"}, "d"),           # same normalised description
            Tool("get_weather", "Weather.", {"type": "object"}, "d")]
    queries = [{"id": str(i), "query": "q", "tool": t.name, "arguments": {}} for i, t in enumerate(pool)]
    tools, kept = exclude_queries(pool, queries, test)
    assert [t.name for t in tools] == ["get_weather"] and [q["tool"] for q in kept] == ["get_weather"]


@pytest.mark.slow
def test_bundled_model_argument_accuracy_on_the_test_split(data_dir, gguf_path, minilm, tmp_path):
    """The first 16 of the README's N=50 test sample (BFCL seed 0, sampling seed 0), routed over their 16 gold tools:
    no prompt, example or rule was chosen on these tools (dev: seed 1, tools disjoint from them). On the README's run
    these 16 scored 0.50 (8/16) at N=50; the bound leaves room for a different routing decision or two."""
    from nexus.datasets.bfcl import build_dataset
    from nexus.llm.llamacpp import LlamaCppBackend
    from nexus.registry.tool import check_tool
    from nexus.router import ScoreGate
    from nexus.slb import SemanticLookasideBuffer

    tools, queries = build_dataset(data_dir / "bfcl", 250, 0)
    registry_tools = [check_tool(t, "bfcl", t["name"]) for t in tools]
    with LlamaCppBackend(gguf_path, n_ctx=4096, n_threads=2) as backend:
        result = run_args(registry_tools, queries, 16, 16, 0, backend, SemanticLookasideBuffer(minilm),
                          lambda slb, reg: ScoreGate(slb), tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert result["n_queries"] == 16 and len(rows) == 16
    assert result["arg_accuracy"] >= 0.375, result
