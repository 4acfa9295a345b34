"""Live MCP servers over stdio: config parsing, ingest, calls, and failures that stay contained."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nexus.demo import demo_servers_config, prepare_workspace
from nexus.errors import ConfigError, ServerError, ToolLoadError
from nexus.registry import Registry
from nexus.registry.servers import (
    HttpServer,
    McpHub,
    StdioServer,
    load_servers,
    load_servers_config,
    parse_servers_config,
)

SERVERS_DIR = Path(__file__).resolve().parents[2] / ".servers"
TIME_SERVER = SERVERS_DIR / "mcp-server-time" / "bin" / "mcp-server-time"

# A tiny MCP server speaking raw JSON-RPC (no SDK), so these tests control pagination, bad schemas
# and tool errors exactly. FAKE_PAGES pages of two tools each; FAKE_BAD=1 breaks tool_1's schema, FAKE_NAMELESS=1
# drops its name (the MCP SDK then refuses the whole page); FAKE_TABLES adds a `list_tables` that answers with its
# text ("fail": an error).
FAKE_SERVER = r"""
import json, os, sys
PAGES = int(os.environ.get("FAKE_PAGES", "1"))
def tool(i):
    kind = 5 if os.environ.get("FAKE_BAD") == "1" and i == 1 else "string"
    out = {"name": f"tool_{i}", "description": f"Tool number {i}",
           "inputSchema": {"type": "object", "properties": {"x": {"type": kind}}}}
    if os.environ.get("FAKE_NAMELESS") == "1" and i == 1:
        del out["name"]
    return out
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "1"}}
    elif method == "tools/list":
        page = int(params.get("cursor") or 0)
        result = {"tools": [tool(2 * page), tool(2 * page + 1)]}
        if "FAKE_TABLES" in os.environ and page == 0:
            result["tools"].append({"name": "list_tables", "description": "List all tables in the database",
                                    "inputSchema": {"type": "object", "properties": {}}})
        if page + 1 < PAGES:
            result["nextCursor"] = str(page + 1)
    elif method == "tools/call" and params["name"] == "list_tables":
        text = os.environ["FAKE_TABLES"]
        result = {"content": [{"type": "text", "text": text}], "isError": text == "fail"}
    elif method == "tools/call":
        args = params.get("arguments") or {}
        text = json.dumps({k: os.environ.get(k) for k in args.get("env", [])}) if "env" in args else "echo " + json.dumps(args)
        result = {"content": [{"type": "text", "text": text}], "isError": bool(args.get("fail"))}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.fixture()
def fake(tmp_path: Path) -> dict:
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    return {"command": sys.executable, "args": [str(script)]}


def crashing() -> dict:
    return {"command": sys.executable, "args": ["-c", "import sys; print('bad config', file=sys.stderr); sys.exit(3)"]}


def load(config: dict, timeout: float = 15.0) -> dict:
    return load_servers(parse_servers_config(config, "test.json"), startup_timeout=timeout)


# --- config -------------------------------------------------------------------------------------


def test_parse_stdio_and_http_entries() -> None:
    specs = parse_servers_config(
        {
            "mcpServers": {
                "local": {"command": "srv", "args": ["-v"], "env": {"K": "v"}, "cwd": "/tmp", "disabled": False},
                "remote": {"url": "http://127.0.0.1:9/mcp", "type": "streamable-http"},
                "remote2": {"url": "https://example.org/mcp", "transport": "http", "headers": {"A": "b"}},
            }
        },
        "cfg.json",
    )
    assert specs["local"] == StdioServer(command="srv", args=["-v"], env={"K": "v"}, cwd="/tmp")
    assert isinstance(specs["remote"], HttpServer) and specs["remote2"].headers == {"A": "b"}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"servers": {}}, "mcpServers"),
        ({"mcpServers": {"a": "srv"}}, "server 'a': must be a JSON object"),
        ({"mcpServers": {"a": {"args": []}}}, "server 'a': needs 'command'"),
        ({"mcpServers": {"a": {"command": ""}}}, "server 'a': command:"),
        ({"mcpServers": {"a": {"command": "x", "args": "-v"}}}, "server 'a': args:"),
        ({"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}, "server 'a': env.N:"),
        ({"mcpServers": {"a": {"url": "ftp://host/mcp"}}}, "server 'a': url:"),
        ({"mcpServers": {"a": {"url": "http://h/sse", "type": "sse"}}}, "SSE transport is not supported"),
        ({"mcpServers": {"a/b": {"command": "x"}}}, "server 'a/b': a server name"),
    ],
)
def test_malformed_config_names_file_and_server(config: dict, expected: str) -> None:
    with pytest.raises(ToolLoadError, match="^cfg.json: ") as info:
        parse_servers_config(config, "cfg.json")
    assert expected in str(info.value)


def test_config_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text('{"mcpServers": {')
    with pytest.raises(ToolLoadError, match="servers.json: invalid JSON"):
        load_servers_config(path)
    path.write_text(json.dumps({"mcpServers": {"t": {"command": "srv"}}}))
    assert load_servers_config(path)["t"].command == "srv"


# --- live servers -------------------------------------------------------------------------------


@pytest.mark.skipif(not TIME_SERVER.exists(), reason=f"run `bash scripts/install_servers.sh .servers` ({TIME_SERVER} missing)")
def test_real_time_server_ingest_and_call() -> None:
    spec = parse_servers_config({"mcpServers": {"time": {"command": str(TIME_SERVER)}}}, "t")

    async def run() -> tuple[list, str]:
        async with McpHub(spec, startup_timeout=20) as hub:
            return hub.tools(), await hub.call_tool("time", "get_current_time", {"timezone": "UTC"})

    tools, text = asyncio.run(run())
    by_name = {t.name: t for t in tools}
    assert {"get_current_time", "convert_time"} <= by_name.keys()
    assert by_name["get_current_time"].origin == "time"
    assert "timezone" in by_name["get_current_time"].input_schema["properties"]
    answer = json.loads(text)
    assert answer["timezone"] == "UTC" and answer["datetime"].endswith("+00:00")


def test_crashed_and_missing_servers_do_not_stop_the_others(fake: dict) -> None:
    statuses = load({"mcpServers": {"crash": crashing(), "missing": {"command": "/no/such/server"}, "good": fake}})
    assert list(statuses) == ["crash", "missing", "good"]
    crash, missing, good = statuses.values()
    assert isinstance(crash.error, ServerError) and crash.tools == ()
    assert "'crash'" in str(crash.error) and "exited or crashed" in str(crash.error)
    assert "bad config" in str(crash.error)  # the server's stderr explains why
    assert "'missing'" in str(missing.error) and "No such file or directory: /no/such/server" in str(missing.error)
    assert good.ok and [t.id for t in good.tools] == ["good/tool_0", "good/tool_1"]


def test_hanging_server_times_out(tmp_path: Path) -> None:
    hang = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    status = load({"mcpServers": {"hang": hang}}, timeout=1.0)["hang"]
    assert "'hang'" in str(status.error) and "no answer to initialize within 1 s" in str(status.error)


def test_pagination_is_followed(fake: dict) -> None:
    fake["env"] = {"FAKE_PAGES": "3"}
    status = load({"mcpServers": {"paged": fake}})["paged"]
    assert [t.name for t in status.tools] == [f"tool_{i}" for i in range(6)]


def test_one_bad_tool_is_left_out_and_the_server_keeps_the_rest(fake: dict, caplog) -> None:
    fake["env"] = {"FAKE_BAD": "1", "FAKE_PAGES": "2"}
    spec = parse_servers_config({"mcpServers": {"bad": fake}}, "t")

    async def run() -> tuple[list[str], tuple[str, ...]]:
        async with McpHub(spec) as hub:
            assert hub.statuses["bad"].ok
            return [t.name for t in hub.statuses["bad"].tools], hub.statuses["bad"].skipped

    names, skipped = asyncio.run(run())
    assert names == ["tool_0", "tool_2", "tool_3"]
    (reason,) = skipped
    assert reason.startswith("MCP server 'bad': tools/list[1] (tool 'tool_1')") and "not valid JSON Schema" in reason
    assert [r.getMessage() for r in caplog.records if "left out" in r.getMessage()] == [f"tool left out: {reason}"]


def test_a_tool_the_sdk_refuses_is_left_out_and_the_server_keeps_the_rest(fake: dict) -> None:
    fake["env"] = {"FAKE_NAMELESS": "1", "FAKE_PAGES": "2"}
    status = load({"mcpServers": {"nameless": fake}})["nameless"]
    assert status.ok and [t.name for t in status.tools] == ["tool_0", "tool_2", "tool_3"]
    (reason,) = status.skipped
    assert reason.startswith("MCP server 'nameless': tools/list[1]") and "no name" in reason


@pytest.mark.parametrize(("answer", "tables"), [("[{'name': 'notes'}, {'name': 'sqlite_sequence'}]", ("notes",)),
                                                ('["users", "orders"]', ("users", "orders")),
                                                ("fail", ()), ("Error: the database is locked", ())])
def test_a_table_lister_gives_its_servers_tools_their_tables(fake: dict, answer: str, tables: tuple) -> None:
    fake["env"] = {"FAKE_TABLES": answer}
    status = load({"mcpServers": {"db": fake}})["db"]
    assert status.ok and [t.name for t in status.tools] == ["tool_0", "tool_1", "list_tables"]
    # no tool describes a table here: the columns stay unknown; a lister that fails or names none changes nothing
    assert all(t.tables == dict.fromkeys(tables, {}) for t in status.tools)
    registry = Registry()
    registry.set_source("db", status.tools)
    assert registry.tables() == tables


def test_env_is_merged_over_the_default_environment_and_calls_work(fake: dict) -> None:
    fake["env"] = {"NEXUS_TEST_VAR": "hello"}
    spec = parse_servers_config({"mcpServers": {"f": fake}}, "t")

    async def run() -> tuple[str, str, Registry]:
        async with McpHub(spec) as hub:
            env = await hub.call_tool("f", "tool_0", {"env": ["NEXUS_TEST_VAR", "PATH"]})
            echo = await hub.call_tool("f", "tool_0", {"x": "y"})
            with pytest.raises(ServerError, match="tool 'tool_0' reported an error"):
                await hub.call_tool("f", "tool_0", {"fail": True})
            with pytest.raises(ServerError, match="not in this hub"):
                await hub.call_tool("nope", "tool_0", {})
            registry = Registry()
            hub.load_into(registry)
            return env, echo, registry

    env, echo, registry = asyncio.run(run())
    values = json.loads(env)
    assert values["NEXUS_TEST_VAR"] == "hello" and values["PATH"]
    assert echo == 'echo {"x": "y"}'
    assert sorted(registry.keys()) == ["tool_0", "tool_1"]


# --- demo config --------------------------------------------------------------------------------


def test_demo_config_builder(tmp_path: Path) -> None:
    servers = tmp_path / "servers"
    for name in ("mcp-server-time", "mcp-server-sqlite"):
        exe = servers / name / "bin" / name
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
    pkg = servers / "npm" / "node_modules" / "@modelcontextprotocol" / "server-memory"
    (pkg / "dist").mkdir(parents=True)
    (pkg / "dist" / "index.js").write_text("")
    (pkg / "package.json").write_text(json.dumps({"bin": {"mcp-server-memory": "dist/index.js"}}))

    config = demo_servers_config(servers, tmp_path / "ws")
    entries = config["mcpServers"]
    assert entries["time"]["command"] == str((servers / "mcp-server-time/bin/mcp-server-time").resolve())
    assert entries["sqlite"]["args"] == ["--db-path", str((tmp_path / "ws" / "demo.db").resolve())]
    assert "git" not in entries and "calculator" not in entries and "filesystem" not in entries
    assert ("memory" in entries) == (shutil.which("node") is not None)  # only where node is on PATH
    if "memory" in entries:
        assert entries["memory"]["args"] == [str((pkg / "dist" / "index.js").resolve())]
        assert entries["memory"]["env"]["MEMORY_FILE_PATH"].endswith("memory.jsonl")
    assert set(parse_servers_config(config, "demo")) == set(entries)
    with pytest.raises(ConfigError, match="install_servers.sh"):
        demo_servers_config(tmp_path / "empty", tmp_path / "ws")


@pytest.mark.skipif(not TIME_SERVER.exists(), reason="demo servers not installed in .servers")
def test_installed_demo_servers_all_load(tmp_path: Path) -> None:
    config = demo_servers_config(SERVERS_DIR, tmp_path / "ws")
    if "git" in config["mcpServers"]:
        assert (tmp_path / "ws" / "repo" / ".git").is_dir()
    statuses = load(config, timeout=20)
    assert {name: s.error for name, s in statuses.items() if not s.ok} == {}
    assert all(s.tools for s in statuses.values())
    # an empty database has no tables to learn; the demo's own, seeded, holds notes (the server's list_tables says so)
    assert all(t.tables == {} for s in statuses.values() for t in s.tools)
    if "sqlite" in statuses:
        sqlite = demo_servers_config(SERVERS_DIR, prepare_workspace(tmp_path / "seeded"))["mcpServers"]["sqlite"]
        seeded = load({"mcpServers": {"sqlite": sqlite}}, timeout=20)["sqlite"]
        # and its columns, from describe_table
        assert all(t.tables == {"notes": {"id": "INTEGER", "title": "TEXT", "body": "TEXT"}} for t in seeded.tools)


HTTP_SERVER = r"""
import sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("adder")
@server.tool()
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b
server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
"""


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_streamable_http_server(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = tmp_path / "http_server.py"
    script.write_text(HTTP_SERVER)
    proc = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, "HTTP MCP server did not start"
            time.sleep(0.1)
        specs = parse_servers_config(
            {"mcpServers": {"adder": {"url": f"http://127.0.0.1:{port}/mcp", "type": "streamable-http"}}}, "t"
        )

        async def run() -> tuple[list, str]:
            async with McpHub(specs, startup_timeout=10) as hub:
                return hub.tools(), await hub.call_tool("adder", "add", {"a": 2, "b": 40})

        tools, text = asyncio.run(run())
        assert [t.id for t in tools] == ["adder/add"] and text == "42"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_servers_list_names_the_tools_it_left_out(fake: dict, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from nexus.cli import app

    fake["env"] = {"FAKE_BAD": "1"}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"bad": fake}}))
    result = CliRunner().invoke(app, ["servers", "list", "--config", str(config), "--json"])
    (row,) = json.loads(result.stdout)
    assert result.exit_code == 0 and row["ok"] and row["tools"] == ["tool_0"]
    (why,) = row["skipped"]
    assert why.startswith("MCP server 'bad': tools/list[1] (tool 'tool_1')") and "not valid JSON Schema" in why
