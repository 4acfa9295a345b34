"""`nexus bench serve`: a bounded loopback load test of `nexus serve openai`.

Three real processes on 127.0.0.1: the scripted upstream (`nexus.serve.scripted`: answers at once, so Nexus and not
an LLM is measured), `nexus serve openai` in filter mode in front of it, and this load generator (asyncio + httpx2,
`clients` concurrent clients x `requests` each, every request carrying the whole registry as an agent does, its
query drawn from the dataset's labelled queries). It stops by itself. Then a short run in route mode (the server's
own LLM answers; `route_clients` x `route_requests`).

Figures: throughput, end-to-end latency p50/p99, errors, the server's own routing work per request
(`X-Nexus-Route-Ms`: the tool list's cache lookup, the turn's embedding, SLB and gate) and the time a request waited
for the router (`X-Nexus-Queue-Ms`: routing runs one at a time), the server's resident memory (now and peak), and how
often the kept tools held the labelled one. Raw rows go to `rows.jsonl`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from nexus.bench.runfolder import percentile, write_jsonl


@dataclass(frozen=True)
class LoadPlan:
    clients: int = 32
    requests: int = 100
    route_clients: int = 2
    route_requests: int = 4
    timeout_s: float = 120.0          # per request, filter mode (a slower answer is an error)
    route_timeout_s: float = 300.0    # per request, route mode (the CPU LLM; a FALLBACK over many schemas can take minutes)


def openai_tools(tools: Sequence[dict]) -> list[dict]:
    """MCP-form tools (name, description, inputSchema) as an OpenAI `tools` list."""
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                               "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}}
            for t in tools]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(url: str, proc: subprocess.Popen, timeout: float) -> None:
    import httpx2

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode} before serving")
        try:
            if httpx2.get(url, timeout=2.0).status_code < 500:
                return
        except httpx2.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not come up within {timeout:.0f} s")
        time.sleep(0.2)


def _rss_mb(pid: int) -> dict[str, float]:
    """Current and peak resident memory of a process (Linux /proc), in MiB."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out["rss_mb" if line.startswith("VmRSS") else "peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return out


def _loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


class _Process:
    """A child process that is always ended (terminate, then kill) when the block ends."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path):
        self.log = open(log_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self) -> subprocess.Popen:
        return self.proc

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


async def _load(url: str, bodies: Sequence[dict], golds: Sequence[str | None], clients: int, per_client: int,
                timeout: float, phase: str) -> tuple[list[dict], float]:
    import anyio
    import httpx2

    rows: list[dict] = []
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(timeout=timeout, limits=limits) as http:
        async def client(number: int) -> None:
            for i in range(per_client):
                # round-robin over the queries: a query comes back only after len(bodies) requests, well past the
                # SLB's 256-entry query memo, so every request embeds its turn
                index = (i * clients + number) % len(bodies)
                start = time.perf_counter()
                row: dict[str, Any] = {"phase": phase, "client": number, "i": i, "query": index}
                try:
                    answer = await http.post(f"{url}/v1/chat/completions", json=bodies[index])
                    row["status"] = answer.status_code
                    row["route_ms"] = float(answer.headers.get("x-nexus-route-ms", "nan"))
                    row["queue_ms"] = float(answer.headers.get("x-nexus-queue-ms", "nan"))
                    row["slb_ms"] = float(answer.headers.get("x-nexus-slb-ms", "nan"))
                    row["gate_ms"] = float(answer.headers.get("x-nexus-gate-ms", "nan"))
                    row["decision"] = answer.headers.get("x-nexus-decision")
                    kept = json.loads(answer.headers.get("x-nexus-kept", "[]"))
                    row["kept"] = len(kept)
                    row["gold_kept"] = golds[index] in kept if golds[index] else None
                    if answer.status_code == 200:
                        message = answer.json()["choices"][0]["message"]
                        calls = message.get("tool_calls") or []
                        row["called"] = calls[0]["function"]["name"] if calls else None
                except Exception as exc:  # noqa: BLE001 - every failure is a counted error, not a crash
                    row["status"], row["error"] = None, f"{type(exc).__name__}: {exc}"
                row["ms"] = (time.perf_counter() - start) * 1000
                rows.append(row)

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for number in range(clients):
                tg.start_soon(client, number)
        seconds = time.perf_counter() - started
    return rows, seconds


def _p50(rows: Sequence[dict], field: str) -> float | None:
    values = [r[field] for r in rows if r.get(field) == r.get(field) and r.get(field) is not None]  # NaN: no header
    return round(percentile(values, 50), 2) if values else None


def summarise(rows: Sequence[dict], seconds: float) -> dict[str, Any]:
    ok = [r for r in rows if r.get("status") == 200]
    route = [r["route_ms"] for r in ok if r.get("route_ms") == r.get("route_ms")]
    labelled = [r for r in ok if r.get("gold_kept") is not None]
    decisions: dict[str, int] = {}
    for r in ok:
        decisions[r.get("decision") or "none"] = decisions.get(r.get("decision") or "none", 0) + 1
    return {
        "requests": len(rows), "errors": len(rows) - len(ok), "seconds": round(seconds, 2),
        "throughput_rps": round(len(ok) / seconds, 2) if seconds else None,
        "latency_ms_p50": round(percentile([r["ms"] for r in ok], 50), 2) if ok else None,
        "latency_ms_p99": round(percentile([r["ms"] for r in ok], 99), 2) if ok else None,
        "route_ms_p50": round(percentile(route, 50), 2) if route else None,
        "route_ms_p99": round(percentile(route, 99), 2) if route else None,
        **{f"{name}_ms_p50": _p50(ok, f"{name}_ms") for name in ("queue", "slb", "gate")},
        "kept_tools_p50": percentile([r["kept"] for r in ok], 50) if ok else None,
        "gold_kept_share": round(sum(r["gold_kept"] for r in labelled) / len(labelled), 4) if labelled else None,
        "decisions": decisions,
        "error_examples": sorted({r.get("error") or str(r.get("status")) for r in rows if r.get("status") != 200})[:5],
    }


def run_serve_bench(tools: Sequence[dict], queries: Sequence[dict], run_dir: Path, plan: LoadPlan = LoadPlan(),
                    env: dict[str, str] | None = None, route: bool = True) -> dict[str, Any]:
    """Start upstream and proxy, run the filter-mode load and (with `route`) the short route-mode run; write
    rows.jsonl and result.json into `run_dir`; every process started here is ended before returning."""
    import anyio

    env = {**os.environ, **(env or {})}
    listed = openai_tools(tools)
    relevant = [q for q in queries if q.get("tool")] or list(queries)
    bodies = [{"model": "bench", "messages": [{"role": "user", "content": q["query"]}], "tools": listed} for q in relevant]
    golds = [q.get("tool") for q in relevant]
    nexus_cmd = [sys.executable, "-c", "from nexus.cli import app; app()", "serve", "openai"]
    result: dict[str, Any] = {"n_tools": len(tools), "n_queries": len(relevant), "plan": plan.__dict__,
                              "loadavg_before": _loadavg()}
    rows: list[dict] = []
    up_port, proxy_port = _free_port(), _free_port()
    with _Process([sys.executable, "-m", "nexus.serve.scripted", "--port", str(up_port)], env, run_dir / "upstream.log") as up:
        _wait(f"http://127.0.0.1:{up_port}/v1/models", up, 60)
        with _Process(nexus_cmd + ["--upstream", f"http://127.0.0.1:{up_port}/v1", "--port", str(proxy_port)], env,
                      run_dir / "proxy.log") as proxy:
            url = f"http://127.0.0.1:{proxy_port}"
            _wait(f"{url}/healthz", proxy, 300)
            result["rss_after_start_mb"] = _rss_mb(proxy.pid).get("rss_mb")
            # the first request indexes the registry (cached by content hash): timed apart from the load
            warm, seconds = anyio.run(lambda: _load(url, bodies[:1], golds[:1], 1, 1, plan.timeout_s, "index"))
            result["first_request_ms"] = round(warm[0]["ms"], 1)
            load, seconds = anyio.run(lambda: _load(url, bodies, golds, plan.clients, plan.requests, plan.timeout_s, "filter"))
            rows += warm + load
            result["filter"] = summarise(load, seconds) | _rss_mb(proxy.pid)
    if route and plan.route_clients and plan.route_requests:
        with _Process(nexus_cmd + ["--mode", "route", "--port", str(proxy_port)], env, run_dir / "route.log") as proxy:
            url = f"http://127.0.0.1:{proxy_port}"
            _wait(f"{url}/healthz", proxy, 600)
            anyio.run(lambda: _load(url, bodies[:1], golds[:1], 1, 1, plan.route_timeout_s, "route-index"))
            load, seconds = anyio.run(lambda: _load(url, bodies, golds, plan.route_clients, plan.route_requests,
                                                    plan.route_timeout_s, "route"))
            rows += load
            result["route"] = summarise(load, seconds) | _rss_mb(proxy.pid)
            result["route"]["tool_call_share"] = round(sum(1 for r in load if r.get("called")) / max(len(load), 1), 4)
    result["loadavg_after"] = _loadavg()  # the cores are shared: say how busy they were
    write_jsonl(run_dir / "rows.jsonl", rows)
    (run_dir / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result
