"""The demo's last step against a real MCP server: a routed, generated call goes through MCP and its result
comes back (mcp-server-time from `.servers`, started over stdio by the test)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from nexus.cli.demo import render
from nexus.config import Settings
from nexus.demo import run_demo
from nexus.nexus import Nexus
from nexus.llm.scripted import ScriptedBackend
from nexus.registry import Tool
from nexus.router import ScoreGate
from nexus.slb import HashEmbedder, SemanticLookasideBuffer

TIME_SERVER = Path(__file__).resolve().parents[2] / ".servers" / "mcp-server-time" / "bin" / "mcp-server-time"
# only the tests that start mcp-server-time need it (the gate-training and progress tests run without)
needs_time_server = pytest.mark.skipif(not TIME_SERVER.exists(), reason="run `bash scripts/install_servers.sh .servers` first")


def facade(tmp_path, backend, gate_factory):
    """The facade the demo runs on, with deterministic parts: a hash embedder, a scripted LLM, the given gate."""
    return Nexus.from_settings(Settings(cache_dir=tmp_path / "cache"), embedder=HashEmbedder(), backend=backend,
                               gate_factory=gate_factory)


@needs_time_server
def test_demo_calls_the_routed_tool_through_mcp(tmp_path):
    backend = ScriptedBackend(arguments=['{"timezone": "Etc/UTC"}'], choices=["get_current_time"],
                              answers=["You're welcome."])
    distractor = Tool("get_weather", "Current weather for a city", {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}, "catalogue")
    servers = {"time": {"command": str(TIME_SERVER), "args": []}}
    from nexus.registry.servers import parse_servers_config

    nexus = facade(tmp_path, backend, lambda slb, reg: ScoreGate(slb, no_tool_below=0.2))
    turns, n_tools, failed = anyio.run(lambda: run_demo(
        nexus, parse_servers_config({"mcpServers": servers}, "test"), ["What is the current time in UTC?", "thanks"],
        extra_sources=lambda live: [("catalogue", [distractor])]))
    assert failed == {} and n_tools == 3  # get_current_time, convert_time, the catalogue distractor
    first = turns[0]
    assert first.routed.call.tool == "get_current_time" and first.server == "time" and first.error is None
    assert json.loads(first.result)["timezone"] == "Etc/UTC"  # the server's own answer
    table = render(turns, n_tools, backend.model_id)
    text = Console(width=200, record=True)
    text.print(table)
    assert "get_current_time" in text.export_text()


@needs_time_server
def test_a_server_error_is_shown_not_raised(tmp_path):
    backend = ScriptedBackend(arguments=['{"timezone": "Mars/Olympus"}'], choices=["get_current_time"])
    from nexus.registry.servers import parse_servers_config

    servers = parse_servers_config({"mcpServers": {"time": {"command": str(TIME_SERVER)}}}, "test")
    nexus = facade(tmp_path, backend, lambda slb, reg: ScoreGate(slb))
    turns, _, _ = anyio.run(lambda: run_demo(nexus, servers, ["What is the current time on Mars?"]))
    assert turns[0].result is None and "Mars/Olympus" in turns[0].error


GIT_SERVER = TIME_SERVER.parents[2] / "mcp-server-git" / "bin" / "mcp-server-git"


@pytest.mark.skipif(not GIT_SERVER.exists(), reason="run `bash scripts/install_servers.sh .servers` first")
def test_pinned_arguments_are_hidden_from_the_model_and_sent_to_the_server(tmp_path):
    """mcp-server-git serves the one repository the demo started it on: the model never writes `repo_path`."""
    from nexus.demo import DEMO_COMMITS, _demo_git_repo, pinned_arguments
    from nexus.registry.servers import parse_servers_config

    _demo_git_repo(tmp_path / "repo")
    servers = parse_servers_config({"mcpServers": {"git": {"command": str(GIT_SERVER),
                                                           "args": ["--repository", str(tmp_path / "repo")]}}}, "test")
    backend = ScriptedBackend(arguments=['{"max_count": 1}'], choices=["git_log"])
    nexus = facade(tmp_path, backend, lambda slb, reg: ScoreGate(slb, no_tool_below=-1.0))
    turns, _, failed = anyio.run(lambda: run_demo(nexus, servers, ["Show the commit logs, 1 entry"], pins=pinned_arguments(tmp_path)))
    assert failed == {}
    turn, call = turns[0], turns[0].routed.call
    assert call.tool == "git_log" and call.valid and call.arguments == {"max_count": 1}  # valid without repo_path
    assert turn.error is None and DEMO_COMMITS[-1][2] in turn.result and DEMO_COMMITS[0][2] not in turn.result
    assert turn.arguments == {"max_count": 1, "repo_path": str((tmp_path / "repo").resolve())}


def test_demo_trains_a_gate_on_first_use_and_reuses_it(tmp_path, caplog):
    """No gate anywhere: the demo trains one (self-supervised here: no BFCL folder), keeps it, loads it next time."""
    import torch

    from nexus.demo import demo_gate
    from nexus.gate import BoundaryGate
    from nexus.gate.training import TrainConfig
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer

    from ..gate.test_training import _synthetic_registry

    torch.set_num_threads(1)
    reg, _ = _synthetic_registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    settings = Settings(cache_dir=tmp_path / "cache", data_dir=tmp_path / "no-data", gate={"k": 6}, shipped_models=False)
    config = TrainConfig(max_length=48, max_steps=4, groups_per_step=2, negatives=3, hard_pool=8, cal_fraction=0.5,
                         self_per_tool=2, k=6)
    steps: list[str] = []
    gate = demo_gate(slb, reg, settings, None, True, 60.0, steps.append, config)
    assert isinstance(gate, BoundaryGate)
    folder = settings.cache_dir / "gate" / "demo"
    assert (folder / "nexus_gate.json").is_file() and any("training the gate" in s for s in steps)
    stamp = (folder / "nexus_gate.json").stat().st_mtime_ns
    steps.clear()
    again = demo_gate(slb, reg, settings, None, True, 60.0, steps.append, config)
    assert isinstance(again, BoundaryGate) and not steps
    assert (folder / "nexus_gate.json").stat().st_mtime_ns == stamp
    # opting out with no model: raw SLB scores, with a warning
    from nexus.router import ScoreGate

    other = Settings(cache_dir=tmp_path / "empty", data_dir=tmp_path / "no-data", gate={"k": 6}, shipped_models=False)
    assert isinstance(demo_gate(slb, reg, other, None, False, 60.0, steps.append), ScoreGate)


@needs_time_server
def test_json_rows_one_per_turn_with_what_a_program_checks(tmp_path):
    """`nexus demo --json OUT`: one object per turn — request, decision, p, tool, arguments, result, error."""
    from nexus.cli.demo import write_rows
    from nexus.registry.servers import parse_servers_config

    backend = ScriptedBackend(arguments=['{"timezone": "Tokyo"}', '{"timezone": "Mars/Olympus"}'],
                              choices=["get_current_time"], answers=["You're welcome."])
    servers = parse_servers_config({"mcpServers": {"time": {"command": str(TIME_SERVER)}}}, "test")
    from nexus.gate.decision import Action, Decision

    class SignOffGate(ScoreGate):  # scripted: which turn needs no tool is not what this test is about
        def decide(self, turn, history=(), hits=None):
            return Decision(Action.NO_TOOL, (), 0.0, 0.97) if turn == "thanks" else super().decide(turn, history, hits)

    nexus = facade(tmp_path, backend, lambda slb, reg: SignOffGate(slb))
    requests = ["What is the current time in Tokyo?", "What is the current time on Mars?", "thanks"]
    turns, _, _ = anyio.run(lambda: run_demo(nexus, servers, requests))
    out = tmp_path / "turns.jsonl"
    write_rows(turns, out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["request"] for r in rows] == requests
    tokyo, mars, thanks = rows
    assert tokyo["tool"] == "get_current_time" and tokyo["arguments"] == {"timezone": "Asia/Tokyo"}  # normalised
    assert json.loads(tokyo["result"])["timezone"] == "Asia/Tokyo" and tokyo["error"] is None
    assert tokyo["decision"] == "route" and tokyo["p"] == pytest.approx(turns[0].routed.decision.p_top1, abs=1e-4)
    assert mars["result"] is None and "Mars/Olympus" in mars["error"]  # the server refused it: reported, not raised
    assert thanks["decision"] == "no_tool" and thanks["p"] == 0.97 and thanks["tool"] is None
    assert thanks["answer"] == "You're welcome." and thanks["error"] is None


def test_progress_is_plain_lines_when_piped():
    import io

    from nexus.cli.demo import StepProgress

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=False, width=200)
    with StepProgress(console, plain_every_s=3600) as step:
        step("loading the LLM")
        for done in range(0, 401, 50):
            step(f"first run: training the gate (steps {done}/400)")
        step("turn 1/2: hello")
    lines = sink.getvalue().splitlines()
    assert len(lines) == 4 and "loading the LLM" in lines[0]  # counted stages: the first and the last line only
    assert lines[1].endswith("(steps 0/400)") and lines[2].endswith("(steps 400/400)") and "turn 1/2" in lines[3]
    assert all(line.startswith("[") and "s] " in line for line in lines)  # each with the time since start


@needs_time_server
def test_first_run_indexing_reports_progress_in_steps(tmp_path, monkeypatch):
    """No index on disk: tools are embedded in steps of INDEX_STEP, each announced as done/total."""
    import nexus.demo as demo_module
    from nexus.registry.servers import parse_servers_config

    monkeypatch.setattr(demo_module, "INDEX_STEP", 2)
    many = [Tool(f"tool_{i}", f"does thing {i}", {"type": "object", "properties": {}}, "catalogue") for i in range(5)]
    servers = parse_servers_config({"mcpServers": {"time": {"command": str(TIME_SERVER)}}}, "test")
    nexus = Nexus.from_settings(Settings(cache_dir=tmp_path / "cache"), embedder=HashEmbedder(),
                                backend=ScriptedBackend(), gate_factory=lambda slb, reg: ScoreGate(slb),
                                index_path=tmp_path / "slb.idx")
    steps: list[str] = []
    anyio.run(lambda: run_demo(nexus, servers, [], extra_sources=lambda live: [(f"c{i}", [t]) for i, t in enumerate(many)],
                               step=steps.append))
    counted = [s for s in steps if s.startswith("indexing tools")]
    assert counted == [f"indexing tools {done}/7" for done in (0, 2, 4, 6)]  # announced as each step of 2 starts
    assert len(nexus.registry) == 7
    saved = SemanticLookasideBuffer(HashEmbedder())  # the index was written, with every tool in it
    saved.load(tmp_path / "slb.idx")
    assert sorted(saved.keys) == sorted(nexus.registry.keys())


def test_a_blank_request_is_refused_before_anything_starts():
    from typer.testing import CliRunner

    from nexus.cli import app

    result = CliRunner().invoke(app, ["demo", "-r", "What time is it in Tokyo?", "-r", "  "])
    assert result.exit_code == 2 and "request 2 of -r is empty" in result.output


def test_catalogue_tools_are_never_taken_for_a_live_servers_tools(tmp_path):
    from nexus.demo import scale_registry_tools

    catalogue = [{"name": "Git", "tools": {"git": {"tools": [
        {"name": "git_init", "description": "Initialise a repository", "inputSchema": {"type": "object"}},
        {"name": "git_log", "description": "Show the commit logs", "inputSchema": {"type": "object"}}]}}}]
    folder = tmp_path / "mcp" / "livemcpbench"
    folder.mkdir(parents=True)
    (folder / "tools.json").write_text(json.dumps(catalogue), encoding="utf-8")
    (source, tools), = scale_registry_tools(tmp_path, live_names={"git_log"})
    # the live server's own tool is left to it; the catalogue's other "git" tool is a catalogue tool, not the live git's
    assert source == "catalogue:git" and [(t.name, t.origin) for t in tools] == [("git_init", "catalogue:git")]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_fresh_workspace_is_seeded_and_keeps_later_changes_until_reset(tmp_path):
    """Everyday requests find something to read (a notes table, Alice in the graph, three commits); a table an earlier
    run created persists, and `--reset` brings back the seed."""
    import sqlite3
    import subprocess

    from nexus.demo import DEMO_COMMITS, DEMO_GRAPH, DEMO_MARKER, DEMO_NOTES, prepare_workspace

    ws = prepare_workspace(tmp_path / "ws")
    assert (ws / DEMO_MARKER).is_file() and "Alice" in (ws / "notes.txt").read_text()
    with sqlite3.connect(ws / "demo.db") as db:
        assert db.execute("SELECT title FROM notes ORDER BY id").fetchall() == [(t,) for t, _ in DEMO_NOTES]
        db.execute("CREATE TABLE movies (title TEXT)")
    db.close()
    assert [json.loads(line) for line in (ws / "memory.jsonl").read_text().splitlines()] == list(DEMO_GRAPH)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=ws / "repo", capture_output=True, text=True).stdout
    assert log.split("\n")[:3] == [m for _, _, m in reversed(DEMO_COMMITS)]

    def tables():
        with sqlite3.connect(ws / "demo.db") as db:
            names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        db.close()
        return names

    prepare_workspace(ws)
    assert tables() == {"notes", "movies"}  # a second run keeps what the first did
    prepare_workspace(ws, reset=True)
    assert tables() == {"notes"} and (ws / DEMO_MARKER).is_file()


def test_reset_leaves_a_folder_the_demo_did_not_set_up_alone(tmp_path):
    from nexus.demo import prepare_workspace
    from nexus.errors import ConfigError

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.txt").write_text("years of work")
    with pytest.raises(ConfigError, match="not set up by the demo"):
        prepare_workspace(mine, reset=True)
    assert (mine / "thesis.txt").read_text() == "years of work"
    prepare_workspace(mine, reset=True, owned=True)  # the cache's own workspace may be emptied
    assert not (mine / "thesis.txt").exists() and (mine / "demo.db").is_file()
