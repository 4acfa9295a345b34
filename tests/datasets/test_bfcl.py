import json

from nexus.datasets.bfcl import build_dataset, write_dataset
from nexus.datasets.queries import family, read_query_records
from nexus.registry import load_tools_file


def test_family_of_sgd_names():
    assert family("Movies_3_FindMovies") == family("Media_3_FindMovies") == "FindMovies"
    assert family("get_weather") == "get_weather"


def test_protocol_invariants(data_dir, tmp_path):
    tools, queries = build_dataset(data_dir / "bfcl", 250, seed=3, no_tool=20)
    assert len(tools) == 250
    names = [t["name"] for t in tools]
    assert len(set(names)) == 250
    assert len({family(n) for n in names}) == 250
    assert len({" ".join(t["description"].lower().split()) for t in tools}) == 250
    relevant = [q for q in queries if q["tool"]]
    assert relevant and all(q["tool"] in set(names) for q in relevant)
    assert sum(q["tool"] is None for q in queries) == 20
    assert all(isinstance(v, list) for q in relevant for v in q["arguments"].values())
    write_dataset(tmp_path, tools, queries)
    assert len(load_tools_file(tmp_path / "tools.json")) == 250  # the registry loads every tool it wrote
    assert read_query_records(tmp_path / "queries.jsonl") == queries
    again = build_dataset(data_dir / "bfcl", 250, seed=3, no_tool=20)
    assert json.dumps(again) == json.dumps((tools, queries))  # fixed seed, same dataset


def test_a_dev_split_shares_no_tool_family_description_or_query_with_the_test_split(data_dir):
    from nexus.registry.tool import Tool

    test_tools, test_queries = build_dataset(data_dir / "bfcl", 120, seed=0, no_tool=20)
    exclude = [Tool(t["name"], t["description"], t["inputSchema"], "test") for t in test_tools]
    dev_tools, dev_queries = build_dataset(data_dir / "bfcl", 120, seed=1, no_tool=20, exclude_tools=exclude,
                                           exclude_ids=[q["id"] for q in test_queries])
    assert len(dev_tools) == 120 and sum(q["tool"] is None for q in dev_queries) == 20
    assert not {t["name"] for t in dev_tools} & {t["name"] for t in test_tools}
    assert not {family(t["name"]) for t in dev_tools} & {family(t["name"]) for t in test_tools}
    norm = lambda t: " ".join(t["description"].lower().split())  # noqa: E731
    assert not {norm(t) for t in dev_tools} & {norm(t) for t in test_tools}
    assert not {q["id"] for q in dev_queries} & {q["id"] for q in test_queries}
