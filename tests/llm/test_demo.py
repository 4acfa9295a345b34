"""The demo's last step against a real MCP server: a routed, generated call goes through MCP and its result
comes back (mcp-server-time from `.servers`, started over stdio by the test)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from nexus.cli.demo import render, run_demo
from nexus.llm.scripted import ScriptedBackend
from nexus.registry import Tool
from nexus.router import ScoreGate
from nexus.slb import HashEmbedder, SemanticLookasideBuffer

TIME_SERVER = Path(__file__).resolve().parents[2] / ".servers" / "mcp-server-time" / "bin" / "mcp-server-time"
pytestmark = pytest.mark.skipif(not TIME_SERVER.exists(), reason="run `bash scripts/install_servers.sh .servers` first")


def slb_factory(registry):
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(registry)
    return slb


def test_demo_calls_the_routed_tool_through_mcp():
    backend = ScriptedBackend(arguments=['{"timezone": "Etc/UTC"}'], choices=["get_current_time"],
                              answers=["You're welcome."])
    distractor = Tool("get_weather", "Current weather for a city", {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}, "catalogue")
    servers = {"time": {"command": str(TIME_SERVER), "args": []}}
    from nexus.registry.servers import parse_servers_config

    turns, n_tools, failed = anyio.run(lambda: run_demo(
        parse_servers_config({"mcpServers": servers}, "test"), ["What is the current time in UTC?", "thanks"],
        backend=backend, slb_factory=slb_factory, gate_factory=lambda slb, reg: ScoreGate(slb, no_tool_below=0.2),
        extra_sources=lambda live: [("catalogue", [distractor])]))
    assert failed == {} and n_tools == 3  # get_current_time, convert_time, the catalogue distractor
    first = turns[0]
    assert first.routed.call.tool == "get_current_time" and first.server == "time" and first.error is None
    assert json.loads(first.result)["timezone"] == "Etc/UTC"  # the server's own answer
    table = render(turns, n_tools, backend.model_id)
    text = Console(width=200, record=True)
    text.print(table)
    assert "get_current_time" in text.export_text()


def test_a_server_error_is_shown_not_raised():
    backend = ScriptedBackend(arguments=['{"timezone": "Mars/Olympus"}'], choices=["get_current_time"])
    from nexus.registry.servers import parse_servers_config

    servers = parse_servers_config({"mcpServers": {"time": {"command": str(TIME_SERVER)}}}, "test")
    turns, _, _ = anyio.run(lambda: run_demo(servers, ["What is the current time on Mars?"], backend=backend,
                                             slb_factory=slb_factory, gate_factory=lambda slb, reg: ScoreGate(slb)))
    assert turns[0].result is None and "Mars/Olympus" in turns[0].error
