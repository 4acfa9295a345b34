"""Training data in the generic form: sources, tool-disjoint exclusion, per-source caps, fingerprints."""

from __future__ import annotations

import json

import pytest

from nexus.datasets import QueryFileError, dataset_folders, overlapping, read_datasets, tools_fingerprint
from nexus.registry import Tool

OBJ = {"type": "object", "properties": {}}


def _folder(root, name, tools, queries):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "tools.json").write_text(json.dumps([{"name": n, "description": d, "inputSchema": OBJ} for n, d in tools]))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return folder


@pytest.fixture()
def train_dir(tmp_path):
    root = tmp_path / "train"
    _folder(root, "alpha", [("search", "Search the web"), ("Weather_1_GetWeather", "Weather for a city")],
            [{"id": "1", "query": "look up cats", "tool": "search"}, {"id": "2", "query": "rain in Oslo?", "tool": "Weather_1_GetWeather"},
             {"id": "3", "query": "find dogs", "tool": "search"}, {"id": "4", "query": "gone", "tool": "not_in_tools"}])
    _folder(root, "beta", [("search", "Search products in the shop")],
            [{"id": "1", "query": "buy socks", "tool": "search"}])
    _folder(root, "no_tool", [], [{"id": "a", "query": "thanks!", "tool": None, "kind": "closing"},
                                  {"id": "b", "query": "hello", "tool": None, "kind": "greeting"}])
    return root


def test_each_folder_is_a_source_and_colliding_names_stay_apart(train_dir):
    registry, turns, stats = read_datasets([train_dir])
    assert sorted(registry.keys()) == ["Weather_1_GetWeather", "alpha.search", "beta.search"]
    by_id = {t.id: t for t in turns}
    assert by_id["alpha:1"].tools == ("alpha.search",) and by_id["beta:1"].tools == ("beta.search",)
    assert by_id["no_tool:a"].tools == () and by_id["no_tool:a"].source == "no_tool"
    assert stats["sources"]["alpha"]["dropped_turns"] == 1 and "alpha:4" not in by_id


def test_excluded_tools_go_with_their_turns_by_family_and_description(train_dir):
    exclude = [Tool("Weather_7_GetWeather", "other words", OBJ, "test"), Tool("find", "Search products in the shop", OBJ, "test")]
    registry, turns, stats = read_datasets([train_dir], exclude)
    assert sorted(registry.keys()) == ["search"]          # the weather family and beta's description are gone
    assert {t.id for t in turns if t.tools} == {"alpha:1", "alpha:3"}
    assert stats["excluded_tools"] == 2 and overlapping(tools_fingerprint(registry.get(k) for k in registry.keys()), exclude) == []


def test_per_source_cap_and_skipped_sources(train_dir):
    _, turns, _ = read_datasets([train_dir], max_per_source=1, skip_sources=["beta"])
    counts = {}
    for t in turns:
        counts[(t.source, bool(t.tools))] = counts.get((t.source, bool(t.tools)), 0) + 1
    assert counts == {("alpha", True): 1, ("no_tool", False): 1}


def test_a_path_that_is_no_dataset_is_an_error(tmp_path):
    with pytest.raises(QueryFileError, match="neither a dataset folder"):
        dataset_folders([tmp_path])
