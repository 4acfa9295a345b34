"""The demo: real MCP servers (installed in `.servers`), their tools (with `--scale` also ~600 catalogue tools), natural
requests routed through the facade (SLB -> gate -> LLM), each chosen tool called through MCP.

`run_demo` is the orchestration (async, every part injectable through the `Nexus` it is given, used by the tests);
`demo_servers_config` is the mcpServers config of the installed demo servers; `demo_gate` finds, or trains on
first use, the gate the demo decides with. `nexus demo` (cli/demo.py) renders the result.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from nexus.errors import ConfigError

log = logging.getLogger(__name__)

# (server the request needs, request); {repo} and {workspace} are filled in with the demo's folders.
DEMO_REQUESTS: tuple[tuple[str, str], ...] = (
    ("time", "What time is it in Tokyo right now?"),
    ("time", "Convert 16:30 from New York time to London time."),
    ("calculator", "What is 12.5 * 8 + 3?"),
    ("git", "Show me the commit log of the git repository at {repo}"),
    ("sqlite", "Which tables are in the SQLite database?"),
    ("filesystem", "List the files in the directory {workspace}"),
    ("memory", "Search my knowledge graph for notes about Alice"),
    ("", "Thanks, that's all for today!"),
)
SERVER_STARTUP_S = 120.0  # the demo's servers start together with the models loading: allow for a busy machine
INDEX_STEP = 64   # tools embedded between two progress lines on a first run
SCALE_SOURCES = (("mcp", "livemcpbench", "tools.json"), ("mcp", "github-mcp-server"))


@dataclass(frozen=True)
class DemoTurn:
    request: str
    routed: Any                 # nexus.router.RoutedTurn
    server: str | None          # where the call went (None: answered, invalid, or a catalogue-only tool)
    result: str | None
    error: str | None
    arguments: dict[str, Any] | None = None   # what went to the server: the model's arguments plus the pinned ones


def turn_row(turn: DemoTurn) -> dict[str, Any]:
    """One turn as a flat JSON object (`nexus demo --json OUT` writes one per line): the request, the gate's
    decision and its probability `p` (of the top tool being right; of "no tool needed" for NO_TOOL), the path that
    produced the call (FALLBACK after a failed repair), the tool called (registry key) with its arguments, the
    server's result or the error, the plain answer of a NO_TOOL turn, and the turn's timings and context size."""
    routed, call = turn.routed, turn.routed.call
    decision = routed.decision
    no_tool = decision.action.value == "no_tool"
    return {
        "request": turn.request, "decision": decision.action.value, "path": call.path.value,
        "p": round(float(decision.p_no_tool if no_tool else decision.p_top1), 4),
        "tool": call.tool, "server": turn.server, "arguments": turn.arguments if turn.arguments is not None else call.arguments,
        "valid": call.valid,
        "result": turn.result, "error": turn.error, "answer": call.answer,
        "ttfat_ms": None if routed.timings.ttfat_ms is None else round(routed.timings.ttfat_ms, 1),
        "total_ms": round(routed.timings.total_ms, 1), "context_tokens": routed.context_tokens,
        "tokens_saved": routed.tokens_saved,
    }


def scale_registry_tools(data_dir: Path, live_names: set[str]) -> list[tuple[str, list[Any]]]:
    """(origin, tools) from the public MCP catalogues in `data_dir`, without copies of the live servers' tools."""
    from nexus.errors import ToolLoadError
    from nexus.registry import load_tools_file

    sources = []
    for parts in SCALE_SOURCES:
        path = Path(data_dir, *parts)
        if not path.exists():
            continue
        try:
            tools = load_tools_file(path)
        except ToolLoadError as exc:
            log.warning("scale registry: %s", exc)
            continue
        by_origin: dict[str, list[Any]] = {}
        for tool in tools:
            if tool.name not in live_names:  # the catalogues list the same servers the demo runs live
                # renamed as catalogue tools: a catalogue's "git" is not the live git server (the demo sent the
                # catalogue's git_init to mcp-server-git, which has no such tool)
                by_origin.setdefault(tool.origin, []).append(replace(tool, origin=f"catalogue:{tool.origin}"))
        sources += [(f"catalogue:{origin}", group) for origin, group in by_origin.items()]
    return sources


def pinned_arguments(workspace: Path) -> dict[str, dict[str, Any]]:
    """Arguments the demo's own server setup fixes, by server: mcp-server-git serves the one repository it was
    started on (`--repository`), so every git tool's `repo_path` is the demo's to fill, not the model's (a user
    says "show the last 3 commits", not the path of the repository)."""
    return {"git": {"repo_path": str(Path(workspace).resolve() / "repo")}}


def unpinned(tool: Any, pins: dict[str, Any]) -> Any:
    """`tool` with the pinned parameters taken out of the schema the model sees (they are added back at call time).

    >>> from nexus.registry import Tool
    >>> t = Tool("git_log", "Shows the commit logs", {"type": "object", "properties": {"repo_path": {"type": "string"},
    ...     "max_count": {"type": "integer"}}, "required": ["repo_path"]}, "git")
    >>> unpinned(t, {"repo_path": "/r"}).input_schema, unpinned(t, {"repo_path": "/r"}).pinned
    ({'type': 'object', 'properties': {'max_count': {'type': 'integer'}}, 'required': []}, {'repo_path': '/r'})
    """
    from dataclasses import replace

    schema = dict(tool.input_schema)
    props = schema.get("properties")
    if not isinstance(props, dict) or not any(name in props for name in pins):
        return tool
    schema["properties"] = {name: sub for name, sub in props.items() if name not in pins}
    if isinstance(schema.get("required"), list):
        schema["required"] = [name for name in schema["required"] if name not in pins]
    return replace(tool, input_schema=schema, pinned={name: value for name, value in pins.items() if name in props})


async def run_demo(nexus: Any, servers: dict[str, Any], requests: Sequence[str], *,
                   extra_sources: Callable[[set[str]], list] = lambda names: [],
                   step: Callable[[str], None] = lambda what: None,
                   pins: dict[str, dict[str, Any]] | None = None,
                   startup_timeout: float = SERVER_STARTUP_S) -> tuple[list[DemoTurn], int, dict[str, str]]:
    """Start `servers` through the facade (`nexus.Nexus`), add the catalogue sources, route and call every
    request; returns (turns, tools, server errors). `pins` (by server): arguments the setup fixes, hidden from
    the model and added to every call of that server's tools (`pinned_arguments`). `startup_timeout`: seconds each
    server may take to answer `initialize` (they start together; on a loaded machine a Python server's imports alone
    took over 30 s)."""
    from nexus.errors import ServerError

    pins = pins or {}
    step("starting MCP servers")
    async with nexus.connect(servers, sync=False, startup_timeout=startup_timeout):
        hub, registry = nexus.hub, nexus.registry
        for server, fixed in pins.items():
            if server in hub.servers and fixed:
                registry.set_source(server, [unpinned(t, fixed) for t in registry.source_tools(server)])
        failed = {name: str(s.error) for name, s in hub.statuses.items() if not s.ok}
        sources = extra_sources({t.name for t in hub.tools()})
        total = len(registry) + sum(len(tools) for _, tools in sources)
        # A first run embeds every tool (minutes on two cores): in steps, so progress shows. With an index on disk
        # one sync reuses every row (a partial sync would drop rows of sources not added yet).
        stepwise = nexus.index_path is None or not Path(nexus.index_path).exists()
        if stepwise:
            step(f"indexing tools 0/{total}")
            nexus.sync()
        done = len(registry)
        for origin, tools in sources:
            registry.set_source(origin, tools)
            if stepwise and len(registry) - done >= INDEX_STEP:
                step(f"indexing tools {done}/{total}")
                nexus.sync()
                done = len(registry)
        step(f"indexing tools {done}/{total}")
        nexus.sync()
        step(f"indexed {len(registry)} tools; loading the gate")
        step("warming the LLM")
        nexus.warm()
        turns, history = [], []
        for number, request in enumerate(requests, 1):
            step(f"turn {number}/{len(requests)}: {request[:50]}")
            routed = nexus.respond_turn(request, history[-2:])
            call = routed.call
            server = result = error = sent = None
            if call.tool is not None and call.valid:
                tool = registry.get(call.tool)
                if tool.origin in hub.servers:
                    server = tool.origin
                    sent = {**call.arguments, **pins.get(server, {})}
                    try:
                        result = await nexus.call(call.tool, sent)
                    except ServerError as exc:
                        error = str(exc)
                else:
                    error = f"{call.tool} is a catalogue tool (from {tool.origin}); no live server to call"
            elif call.tool is None and call.answer is None:
                error = "; ".join(call.errors) or "no valid call"
            elif call.tool is not None:
                error = "invalid arguments: " + "; ".join(call.errors)
            turns.append(DemoTurn(request, routed, server, result, error, sent))
            history.append(routed.exchange(result if result is not None else error))
        return turns, len(registry), failed


def fill_placeholders(request: str, workspace: Path) -> str:
    """`{workspace}` and `{repo}` in a request written for the demo, filled with its workspace and git repository
    (replaced, not `str.format`: a user's request may hold other braces)."""
    return request.replace("{workspace}", str(workspace)).replace("{repo}", str(workspace / "repo"))


def run_requests(settings: Any, workspace: Path, requests: Sequence[str], step: Callable[[str], None], *,
                 scale: bool = False, gate_model: Path | None = None, train_gate: bool = True,
                 gate_budget: float = 540.0) -> tuple[list[DemoTurn], int, dict[str, str], str]:
    """Start the demo servers on a prepared `workspace`, route `requests` (the demo's own when empty) through the facade
    and call each chosen tool: (turns, tools in the registry, servers that did not start, the LLM's id). What `nexus
    demo` and `nexus bench demo` run. Raises NexusError."""
    import anyio

    from nexus.nexus import Nexus
    from nexus.registry.servers import parse_servers_config

    servers = parse_servers_config(demo_servers_config(settings.servers_dir, workspace), str(settings.servers_dir))
    requests = list(requests) or [fill_placeholders(text, workspace) for need, text in DEMO_REQUESTS
                                  if not need or need in servers]
    step("loading the LLM and the embedder")
    nexus = Nexus.from_settings(settings, index_path=settings.cache_dir / "demo" / "slb.idx",
                                gate_factory=lambda slb, reg: demo_gate(slb, reg, settings, gate_model, train_gate,
                                                                        gate_budget, step))
    backend = nexus.backend
    try:
        def extra(live_names: set[str]) -> list:
            return scale_registry_tools(settings.data_dir, live_names) if scale and settings.data_dir.exists() else []

        turns, n_tools, failed = anyio.run(lambda: run_demo(nexus, servers, requests, extra_sources=extra, step=step,
                                                            pins=pinned_arguments(workspace)))
        return turns, n_tools, failed, backend.model_id
    finally:
        backend.close()


def demo_gate(slb: Any, registry: Any, settings: Any, model_dir: Path | None, train: bool, budget_s: float,
              step: Callable[[str], None], config: Any = None) -> Any:
    """The gate the demo decides with: a trained model when one exists (the given folder, NEXUS_GATE_MODEL, the
    cache's default, or the demo's own), else with `train` (the default) one trained now, on first use, within
    `budget_s` seconds and kept in the cache, else raw SLB scores (`ScoreGate`)."""
    from nexus.errors import ConfigError
    from nexus.router import ScoreGate, load_gate

    if model_dir is not None and not Path(model_dir).is_dir():
        raise ConfigError(f"--gate-model {model_dir} is not a folder; train one with `nexus gate train --out {model_dir}`")
    own = settings.cache_dir / "gate" / "demo"
    for candidate in (model_dir, settings.gate_dir(), own):  # gate_dir: NEXUS_GATE_MODEL, the cache's, the shipped models/gate
        if candidate is not None and Path(candidate).is_dir():
            return load_gate(slb, registry, Path(candidate), gate_settings=settings.gate)
    if not train:
        log.warning("no trained gate found: deciding on raw SLB scores (uncalibrated); train one with "
                    "`nexus gate train` or run `nexus demo --train-gate`")
        return ScoreGate(slb, k=settings.gate.k, shortlist_k=settings.gate.shortlist_k)
    return _train_demo_gate(slb, registry, settings, own, budget_s, step, config)


def _train_demo_gate(slb: Any, registry: Any, settings: Any, out: Path, budget_s: float, step: Callable[[str], None],
                     config: Any = None) -> Any:
    """First-use training: self-supervised on the demo registry's own tools, plus BFCL's labelled turns
    (irrelevance as no-tool turns) when the data folder exists — the demo's tools are none of BFCL's, so those
    teach the general skill and calibrate it on held-out BFCL tools."""
    from dataclasses import replace

    from nexus.datasets import LabelledTurn
    from nexus.gate.training import TrainConfig, train_gate
    from nexus.registry import Registry
    from nexus.router import ScoreGate, load_gate

    train_registry, train_slb, turns = registry, slb, []
    bfcl = settings.data_dir / "bfcl"
    if bfcl.is_dir():
        from nexus.datasets.bfcl import bfcl_training_pool
        from nexus.registry.tool import check_tool
        from nexus.slb import SemanticLookasideBuffer

        step("first run: building the gate's training data from BFCL")
        tools, rows, _ = bfcl_training_pool(bfcl, [])
        train_registry = Registry()
        for source in registry.sources():
            train_registry.set_source(source, registry.source_tools(source))
        train_registry.set_source("bfcl", [check_tool(t, "bfcl", t["name"]) for t in tools])
        names = {tool.name: key for key, tool in train_registry.items() if tool.origin == "bfcl"}
        train_slb = SemanticLookasideBuffer(slb.embedder, slb.weights)
        train_slb.open(settings.cache_dir / "demo" / "gate-train-slb.idx", train_registry)
        turns = [LabelledTurn(str(r["id"]), r["query"], (names.get(r["tool"], r["tool"]),) if r["tool"] else ()) for r in rows]

    def progress(stage: str, done: int, total: int, loss: float) -> None:
        step(f"first run: training the gate ({stage} {done}/{total}, at most {budget_s:.0f} s)")

    config = replace(config or TrainConfig.from_settings(settings.gate), time_budget_s=budget_s)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(settings.gate.training_threads())
    try:
        train_gate(train_registry, train_slb, turns, True, config, out, progress=progress)
    except Exception as exc:  # noqa: BLE001 - the demo goes on without a gate, and says why
        log.warning("gate training failed (%s); deciding on raw SLB scores", exc)
        return ScoreGate(slb, k=settings.gate.k, shortlist_k=settings.gate.shortlist_k)
    finally:
        torch.set_num_threads(threads)
    return load_gate(slb, registry, out, gate_settings=settings.gate)


def _npm_entry(servers_dir: Path, package: str) -> Path | None:
    """The installed package's bin script, run with `node` (npx could try the network)."""
    root = servers_dir / "npm" / "node_modules" / package
    try:
        manifest = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    bin_field = manifest.get("bin")
    entry = bin_field if isinstance(bin_field, str) else next(iter((bin_field or {}).values()), None)
    return (root / entry).resolve() if entry and (root / entry).is_file() else None


# What the demo's servers start with in a fresh workspace, so everyday requests have something to read.
DEMO_MARKER = ".nexus-demo"   # in a workspace the demo set up; `--reset` empties only such a folder (or its own cache's)
DEMO_COMMITS = (("README.md", "# Demo repository\n\nCreated by nexus for the mcp-server-git demo.\n", "Initial commit"),
                ("notes.md", "# Meeting notes\n\n- Alice: the Acme contract is due on Friday.\n", "Add meeting notes"),
                ("README.md", "# Demo repository\n\nCreated by nexus for the mcp-server-git demo: notes and plans.\n",
                 "Describe what the repository holds"))
DEMO_NOTES = (("Buy milk", "Semi-skimmed, two litres"), ("Call Alice", "About the Acme contract"),
              ("Book the dentist", "Any weekday morning"))
DEMO_GRAPH = ({"type": "entity", "name": "Alice", "entityType": "person", "observations": ["works at Acme", "likes tennis"]},
              {"type": "entity", "name": "Acme", "entityType": "company", "observations": ["makes rockets"]},
              {"type": "relation", "from": "Alice", "to": "Acme", "relationType": "works_at"})


def prepare_workspace(workspace: Path, reset: bool = False, owned: bool = False) -> Path:
    """The demo's data in `workspace`, each part seeded where it is missing: notes.txt, a git repository with three
    commits (`DEMO_COMMITS`), demo.db with a `notes` table (`DEMO_NOTES`) and memory.jsonl with Alice and Acme
    (`DEMO_GRAPH`). Earlier runs' changes (tables, entities, branches) persist, as a user's would; `reset` removes
    them first, but only in a folder the demo set up (its `DEMO_MARKER` file) or one it `owned` (the cache's)."""
    workspace = Path(workspace).resolve()
    if reset and workspace.exists():
        if not (owned or (workspace / DEMO_MARKER).is_file()):
            raise ConfigError(f"{workspace} was not set up by the demo (no {DEMO_MARKER} file in it): --reset leaves "
                              "it alone; give --workspace a new folder instead")
        shutil.rmtree(workspace)
    if not workspace.exists() or not any(workspace.iterdir()):
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / DEMO_MARKER).write_text("set up by `nexus demo`; `nexus demo --reset` empties this folder\n")
    (workspace / "notes.txt").write_text("Demo notes: Alice works at Acme.\n", encoding="utf-8")
    if shutil.which("git"):
        _demo_git_repo(workspace / "repo")
    _demo_database(workspace / "demo.db")
    if not (workspace / "memory.jsonl").exists():
        (workspace / "memory.jsonl").write_text("".join(json.dumps(row) + "\n" for row in DEMO_GRAPH), encoding="utf-8")
    return workspace


def _demo_database(path: Path) -> None:
    import sqlite3

    if path.exists():
        return
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT)")
        db.executemany("INSERT INTO notes (title, body) VALUES (?, ?)", DEMO_NOTES)
    db.close()


def _demo_git_repo(repo: Path) -> None:
    if (repo / ".git").exists():
        return
    repo.mkdir(parents=True, exist_ok=True)

    def git(*cmd: str) -> None:
        done = subprocess.run(["git", "-c", "user.name=nexus", "-c", "user.email=nexus@localhost", *cmd], cwd=repo,
                              capture_output=True, text=True)
        if done.returncode:
            raise ConfigError(f"cannot create the demo git repo {repo}: git {cmd[0]}: {done.stderr.strip()}")

    git("init", "-q")
    for name, text, message in DEMO_COMMITS:
        (repo / name).write_text(text, encoding="utf-8")
        git("add", name)
        git("commit", "-q", "-m", message)


def demo_servers_config(servers_dir: Path, workspace: Path) -> dict[str, Any]:
    """The mcpServers config for the servers `scripts/install_servers.sh` put in `servers_dir`.

    Servers that are not installed (or whose runtime, git or node, is missing) are left out;
    data they work on (a git repo, demo.db, memory.jsonl, the filesystem root) lives in `workspace`.
    """
    servers_dir, workspace = Path(servers_dir).resolve(), Path(workspace).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    servers: dict[str, Any] = {}

    def script(package: str) -> str | None:
        path = servers_dir / package / "bin" / package
        return str(path) if path.is_file() else None

    if exe := script("mcp-server-time"):
        servers["time"] = {"command": exe, "args": []}
    if (exe := script("mcp-server-git")) and shutil.which("git"):
        _demo_git_repo(workspace / "repo")
        servers["git"] = {"command": exe, "args": ["--repository", str(workspace / "repo")]}
    if exe := script("mcp-server-sqlite"):
        servers["sqlite"] = {"command": exe, "args": ["--db-path", str(workspace / "demo.db")]}
    if exe := script("mcp-server-calculator"):
        servers["calculator"] = {"command": exe, "args": []}
    node = shutil.which("node")
    if node and (entry := _npm_entry(servers_dir, "@modelcontextprotocol/server-filesystem")):
        servers["filesystem"] = {"command": node, "args": [str(entry), str(workspace)]}
    if node and (entry := _npm_entry(servers_dir, "@modelcontextprotocol/server-memory")):
        servers["memory"] = {
            "command": node,
            "args": [str(entry)],
            "env": {"MEMORY_FILE_PATH": str(workspace / "memory.jsonl")},
        }
    if not servers:
        raise ConfigError(f"no demo MCP servers installed in {servers_dir}; run: bash scripts/install_servers.sh {servers_dir}")
    return {"mcpServers": servers}
