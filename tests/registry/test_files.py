import json

import pytest

from nexus.errors import ToolLoadError
from nexus.registry import Registry, load_registry, load_tools_file
from nexus.registry.files import detect_format

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def write(tmp_path, name, payload):
    path = tmp_path / name
    path.write_text(json.dumps(payload) if not isinstance(payload, str) else payload, encoding="utf-8")
    return path


def test_mcp_list_and_wrapped_forms(tmp_path):
    tool = {"name": "weather", "description": "Weather for a city", "inputSchema": SCHEMA}
    for payload in ([tool], {"tools": [tool]}):
        tools = load_tools_file(write(tmp_path, "a.json", payload), origin="srv")
        assert [(t.name, t.origin) for t in tools] == [("weather", "srv")]
        assert tools[0].input_schema == SCHEMA


def test_openai_tools(tmp_path):
    payload = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": SCHEMA}}]
    (tool,) = load_tools_file(write(tmp_path, "o.json", payload))
    assert tool.name == "f" and tool.input_schema["required"] == ["city"]


def test_bfcl_types_become_json_schema(tmp_path):
    payload = [{"name": "calc.area", "description": "Area", "parameters": {
        "type": "dict", "properties": {"r": {"type": "float"}, "pts": {"type": "tuple", "items": {"type": "any"}}},
        "required": ["r"]}}]
    (tool,) = load_tools_file(write(tmp_path, "b.json", payload))
    assert detect_format(payload) == "bfcl"
    assert tool.input_schema["type"] == "object"
    assert tool.input_schema["properties"]["r"]["type"] == "number"
    assert tool.input_schema["properties"]["pts"] == {"type": "array", "items": {"type": "string"}}


@pytest.mark.parametrize(
    "payload, message",
    [
        ("{not json", "invalid JSON"),
        ([{"description": "no name", "inputSchema": SCHEMA}], "has no name"),
        ([{"name": "x", "inputSchema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}}], "not valid JSON Schema"),
        ([{"name": "x", "inputSchema": {"type": "string"}}], "must be 'object'"),
        ([{"name": "x", "description": "y" * 1_000_000, "inputSchema": SCHEMA}], "over the"),
        ([{"name": "dup", "inputSchema": SCHEMA}, {"name": "dup", "inputSchema": SCHEMA}], "duplicate tool name"),
        ({"something": "else"}, "unrecognised tools file"),
    ],
)
def test_bad_input_is_refused_whole(tmp_path, payload, message):
    path = write(tmp_path, "bad.json", payload)
    with pytest.raises(ToolLoadError, match=message) as info:
        load_tools_file(path)
    assert "bad.json" in str(info.value)


def test_non_utf8_bytes(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"name": "caf\xe9", "inputSchema": {"type": "object"}}]')
    with pytest.raises(ToolLoadError, match="not UTF-8"):
        load_tools_file(path)


def test_bad_tool_in_a_good_file_loads_nothing_and_keeps_registry(tmp_path):
    registry = Registry()
    good = load_tools_file(write(tmp_path, "good.json", [{"name": "a", "inputSchema": SCHEMA}]), origin="s")
    registry.set_source("s", good)
    bad = write(tmp_path, "bad.json", [{"name": "b", "inputSchema": SCHEMA}, {"inputSchema": SCHEMA}])
    with pytest.raises(ToolLoadError):
        registry.set_source("s", load_tools_file(bad, origin="s"))
    assert registry.keys() == ["a"]


def test_real_mcp_tool_lists_load(data_dir):
    github = load_tools_file(data_dir / "mcp" / "github-mcp-server")
    assert len(github) == 117
    catalogue = load_tools_file(data_dir / "mcp" / "livemcpbench" / "tools.json")
    assert len(catalogue) == 527
    registry = Registry()
    for origin in {t.origin for t in catalogue}:
        registry.set_source(origin, [t for t in catalogue if t.origin == origin])
    assert len(registry) == 527  # 13 repeated names are namespaced, none dropped
    assert any(key.count(".") and key.split(".", 1)[0] in registry.sources() for key in registry.keys())


def _tools(path, names):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"tools": [{"name": n, "description": f"{n} tool", "inputSchema": {"type": "object"}} for n in names]}))
    return path


def test_registry_keeps_same_stem_files_and_namespaces_collisions(tmp_path):
    a = _tools(tmp_path / "a" / "tools.json", ["ping", "alpha"])
    b = _tools(tmp_path / "b" / "tools.json", ["ping", "beta"])
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps([
        {"name": "s1", "tools": {"s1": {"tools": [{"name": "dup", "description": "one", "inputSchema": {"type": "object"}}]}}},
        {"name": "s2", "tools": {"s2": {"tools": [{"name": "dup", "description": "two", "inputSchema": {"type": "object"}}]}}},
    ]))
    registry = load_registry([a, b, catalogue])
    assert len(registry) == 6
    assert {"alpha", "beta", "s1.dup", "s2.dup"} <= set(registry.keys())
    assert sum(1 for k in registry.keys() if k.endswith("ping")) == 2
