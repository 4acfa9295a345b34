"""`nexus bench demo`: everyday requests over the demo's live MCP servers, each with the tool it needs, scored.

A request file is a TSV (`tool[|other_tool...]<TAB>request`, `-` for a turn that needs no tool; `#` starts a comment)
or a JSONL file (`{"request": ..., "expect": ["tool", ...] | null}`). `{workspace}` and `{repo}` in a request are
filled in with the run's workspace. A turn is **right** when the call went to one of its tools (for a no-tool turn:
the gate decided NO_TOOL) and **answered** when it is right and the server returned no error — neither an MCP error
nor a result whose text reports one: the SQLite server returns "Database error: no such table: books" as a plain
result, and `read_multiple_files` reports a file it could not read inside its result ("todo.txt: Error - ENOENT …");
such rows count as `error_texts`, not answered.

>>> rows = [{"tool": "calculate", "decision": "shortlist", "error": None}, {"tool": None, "decision": "no_tool", "error": None}]
>>> score(rows, [Expected("What is 2+2?", ("calculate",)), Expected("Thanks!", None)])["right"]
2
>>> [reports_error(t) for t in ("Database error: no such table: books", "a.txt: Error - ENOENT: no such file",
...                                 "[{'COUNT(*)': 3}]", "Errors are logged in app.log", None)]
[True, True, False, False, False]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from nexus.bench.runfolder import percentile
from nexus.errors import ConfigError


@dataclass(frozen=True)
class Expected:
    request: str
    tools: tuple[str, ...] | None   # any of these is right; None: no tool is needed


def _tsv_line(line: str, where: str) -> Expected:
    want, sep, request = line.partition("\t")
    if not sep or not request.strip() or not want.strip():
        raise ConfigError(f"{where}: expected `tool<TAB>request` (`-` for no tool), got {line[:80]!r}")
    tools = None if want.strip() == "-" else tuple(t.strip() for t in want.split("|") if t.strip())
    return Expected(request.strip(), tools)


def _json_line(line: str, where: str) -> Expected:
    try:
        row = json.loads(line)
    except ValueError as exc:
        raise ConfigError(f"{where}: not JSON ({exc})") from None
    request, expect = (row.get("request"), row.get("expect")) if isinstance(row, dict) else (None, None)
    if not isinstance(request, str) or not request.strip():
        raise ConfigError(f"{where}: needs a non-empty \"request\"")
    if expect is not None and (not isinstance(expect, list) or not expect or not all(isinstance(t, str) for t in expect)):
        raise ConfigError(f"{where}: \"expect\" must be a list of tool names, or null for a turn that needs no tool")
    return Expected(request.strip(), None if expect is None else tuple(expect))


def read_requests(path: str | Path) -> list[Expected]:
    """The requests of a TSV or JSONL request file, in order; a malformed line is an error that names it."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the request file {path}: {exc}") from None
    parse = _json_line if path.suffix == ".jsonl" else _tsv_line
    out = [parse(line, f"{path}:{n}") for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]
    if not out:
        raise ConfigError(f"{path} holds no requests")
    return out


def fill(expected: Sequence[Expected], workspace: Path) -> list[Expected]:
    """`{workspace}` and `{repo}` filled in (the demo workspace and its git repository)."""
    from nexus.demo import fill_placeholders

    return [Expected(fill_placeholders(e.request, workspace), e.tools) for e in expected]


# a line that reports an error: "Database error: …", "notes.txt: Error - ENOENT …", "Error executing …"
_ERROR_LINE = re.compile(r"^\s*(?:[\w./-]+:\s*)?(?:\w+\s+)?error\b\s*(?:[:-]|executing|while)", re.I | re.M)


def reports_error(result: Any) -> bool:
    """Whether a tool's result text has a line that reports an error."""
    return isinstance(result, str) and bool(_ERROR_LINE.search(result))


def is_right(row: dict[str, Any], expected: Expected) -> bool:
    if expected.tools is None:
        return row.get("decision") == "no_tool"
    return row.get("tool") in expected.tools


def score(rows: Sequence[dict[str, Any]], expected: Sequence[Expected]) -> dict[str, Any]:
    """Counts over the turns (`rows` as `nexus.demo.turn_row` writes them, one per expected request)."""
    if len(rows) != len(expected):
        raise ValueError(f"{len(rows)} turns for {len(expected)} requests")
    tool = [(r, e) for r, e in zip(rows, expected) if e.tools is not None]
    chat = [(r, e) for r, e in zip(rows, expected) if e.tools is None]
    right = [is_right(r, e) for r, e in zip(rows, expected)]
    texts = [reports_error(r.get("result")) for r in rows]
    answered = [ok and not r.get("error") and not text for ok, r, text in zip(right, rows, texts)]
    totals = [float(r["total_ms"]) for r in rows if r.get("total_ms") is not None]
    ttfat = [float(r["ttfat_ms"]) for r in rows if r.get("ttfat_ms") is not None]
    return {
        "requests": len(rows), "right": sum(right), "answered": sum(answered), "error_texts": sum(texts),
        "tool_requests": len(tool), "tool_right": sum(is_right(r, e) for r, e in tool),
        "wrong_no_tool": sum(r.get("decision") == "no_tool" for r, _ in tool),
        "no_tool_requests": len(chat), "no_tool_right": sum(is_right(r, e) for r, e in chat),
        "turn_ms_p50": percentile(totals, 50), "ttfat_ms_p50": percentile(ttfat, 50),
    }
