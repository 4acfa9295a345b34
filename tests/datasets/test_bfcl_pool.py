"""The BFCL training pool is tool-disjoint from a test registry and never uses live_irrelevance (needs ../shared/data)."""

from __future__ import annotations

from nexus.datasets.bfcl import bfcl_multi_call, bfcl_training_pool
from nexus.datasets.queries import equivalence_key
from nexus.registry import Tool


def test_pool_is_tool_disjoint_and_uses_irrelevance_only(data_dir):
    from nexus.datasets.bfcl import build_dataset
    from nexus.registry.tool import check_tool

    test_tools, _ = build_dataset(data_dir / "bfcl", 100, seed=3)
    exclude = [check_tool(t, "test", t["name"]) for t in test_tools]
    pool, turns, stats = bfcl_training_pool(data_dir / "bfcl", exclude)
    banned_names = {t.name for t in exclude}
    banned_keys = {k for t in exclude for k in equivalence_key(t) if k}
    for raw in pool:
        tool = Tool(raw["name"], raw["description"], raw["inputSchema"])
        assert tool.name not in banned_names
        assert not set(equivalence_key(tool)) & banned_keys
    pool_names = {t["name"] for t in pool}
    assert all(t["tool"] in pool_names for t in turns if t["tool"])
    no_tool_ids = [t["id"] for t in turns if not t["tool"]]
    assert no_tool_ids and all(i.startswith("irrelevance_") for i in no_tool_ids)
    assert stats["relevant_turns"] > 100 and stats["excluded_tools"] >= 100


def test_multi_call_turns_name_several_offered_tools(data_dir):
    tools, turns = bfcl_multi_call(data_dir / "bfcl")
    names = {t.name for t in tools}
    assert len(turns) == 200
    multi = [needed for _, needed in turns if len(needed) >= 2]
    assert len(multi) > 150 and all(set(needed) <= names for needed in multi)
