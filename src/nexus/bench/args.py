"""`nexus bench args`: argument accuracy of the routed path at one registry size, with an error analysis.

The queries run through the same `nexus` path as `nexus bench latency` (SLB -> gate -> LLM path -> validation,
`run_nexus`) on a registry of the sampled queries' gold tools plus seeded distractors (`build_cases`), and the
arguments are scored with the same BFCL allowed-values rules (`args_match`). What this adds: a tool-disjoint
dev split (`exclude` drops every query whose gold tool shares a name, SGD family or description with the
excluded tools) and one error category per argument that is wrong, so prompt and grammar changes can be
chosen on a dev split and the test split reported with what is left.

    nexus data bfcl --src ../shared/data/bfcl --size 250 --seed 0 --out test
    nexus data bfcl --src ../shared/data/bfcl --size 250 --seed 1 --out dev
    nexus bench args --tools dev/tools.json --queries dev/queries.jsonl --exclude-tools test/tools.json   # choose
    nexus bench args --tools test/tools.json --queries test/queries.jsonl                                # report

>>> tool = Tool("t", "", {"type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]},
...     "city": {"type": "string"}}, "required": ["city"]}, "s")
>>> argument_errors("weather in Paris", tool, {"city": "Paris", "unit": "f"}, {"city": ["Paris"], "unit": ["", "c"]})
[('unit', 'enum_value')]
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from nexus.bench.latency import Case, _norm, args_match, build_cases, run_nexus, value_matches
from nexus.bench.runfolder import write_jsonl
from nexus.datasets import tool_disjoint
from nexus.llm.base import LLMBackend
from nexus.registry import Registry, Tool
from nexus.router import Gate, Router
from nexus.slb.index import SemanticLookasideBuffer

# What went wrong with one argument (or the whole call); the README's error analysis counts these.
CATEGORIES = {
    "wrong_tool": "the path called another tool",
    "no_valid_call": "no call passed schema validation, repair and fallback included",
    "missing_required": "a parameter the schema requires was left out",
    "missing_stated": "an optional parameter the request states was left out",
    "unstated_optional": "an optional parameter the request does not state was filled in",
    "unknown_parameter": "a parameter the answer does not know",
    "enum_value": "the wrong one of the schema's enum values",
    "boolean_value": "the wrong boolean",
    "number_value": "a wrong number",
    "type_mismatch": "a value of the wrong JSON type (e.g. a number as a string)",
    "date_time_format": "a date or time in another format or wrong",
    "copy_value": "a string the request contains verbatim, copied wrongly",
    "inferred_value": "a string that must be inferred or reformatted (not verbatim in the request)",
    "structured_value": "a wrong array or object",
}
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}|^\d{1,2}/\d{1,2}/\d{2,4}$")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _value_category(request: str, schema: Mapping[str, Any], value: Any, options: Sequence[Any]) -> str:
    wanted = [o for o in options if o != ""]
    if isinstance(schema.get("enum"), list):
        return "enum_value"
    if wanted and all(_kind(o) != _kind(value) for o in wanted) and not (
            isinstance(value, (list, dict)) or any(isinstance(o, (list, dict)) for o in wanted)):
        return "type_mismatch"
    if isinstance(value, bool):
        return "boolean_value"
    if isinstance(value, (int, float)):
        return "number_value"
    if isinstance(value, (list, dict)):
        return "structured_value"
    if any(isinstance(o, str) and _DATE_TIME.match(o) for o in wanted):
        return "date_time_format"
    norm_request = _norm(request)
    if any(isinstance(o, str) and o and _norm(o) in norm_request for o in wanted):
        return "copy_value"
    return "inferred_value"


def argument_errors(request: str, tool: Tool, predicted: Mapping[str, Any] | None,
                    allowed: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(parameter, category) for every argument that breaks BFCL's allowed-values rules; [] when it matches."""
    if not isinstance(predicted, Mapping):
        return [("", "no_valid_call")]
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    errors = []
    for name, value in predicted.items():
        if name not in allowed:
            errors.append((name, "unknown_parameter"))
            continue
        options = allowed[name] if isinstance(allowed[name], list) else [allowed[name]]
        if any(value_matches(value, o) for o in options if o != ""):
            continue
        stated = [o for o in options if o != ""]
        category = "unstated_optional" if not stated else _value_category(request, props.get(name) or {}, value, stated)
        errors.append((name, category))
    for name, options in allowed.items():
        options = options if isinstance(options, list) else [options]
        if name not in predicted and "" not in options:
            errors.append((name, "missing_required" if name in required else "missing_stated"))
    return errors


def exclude_queries(cases_tools: Sequence[Tool], queries: Sequence[dict[str, Any]],
                    exclude: Sequence[Tool]) -> tuple[list[Tool], list[dict[str, Any]]]:
    """The tools sharing nothing with `exclude` (name, SGD family, description) and the queries on them."""
    kept = tool_disjoint(cases_tools, exclude)
    names = {t.name for t in kept}
    return kept, [q for q in queries if q.get("tool") in names]


def score_rows(case: Case, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with `errors` ([parameter, category] pairs) and the row's first category (`category`)."""
    by_name = {t.name: t for t in case.tools}
    out = []
    for row, query in zip(rows, case.queries):
        allowed = query.get("arguments") or {}
        if row["tool"] != row["gold"]:
            errors = [("", "wrong_tool")] if row["tool"] else [("", "no_valid_call")]
        else:
            errors = argument_errors(row["query"], by_name[row["gold"]], row["arguments"] if row["valid"] else None, allowed)
        out.append({**row, "allowed": allowed, "errors": errors, "category": errors[0][1] if errors else None})
    return out


def summarise_args(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    tool_ok = [r for r in rows if r["tool_ok"]]
    return {
        "n_queries": n,
        "arg_accuracy": round(sum(r["args_ok"] for r in rows) / n, 4) if n else None,
        "tool_accuracy": round(len(tool_ok) / n, 4) if n else None,
        "arg_accuracy_given_tool": round(sum(r["args_ok"] for r in tool_ok) / len(tool_ok), 4) if tool_ok else None,
        "valid_calls": round(sum(bool(r["valid"]) for r in rows) / n, 4) if n else None,
        "repaired": sum(1 for r in rows if r.get("attempts", 1) > 1),
        "queries_by_first_error": dict(Counter(r["category"] for r in rows if r["category"]).most_common()),
        "arguments_by_error": dict(Counter(c for r in rows for _, c in r["errors"]).most_common()),
        "decisions": dict(Counter(r.get("decision") for r in rows)),
    }


def run_args(tools: Sequence[Tool], queries: Sequence[dict[str, Any]], size: int, limit: int, seed: int,
             backend: LLMBackend, slb: SemanticLookasideBuffer, gate_for: Callable[[SemanticLookasideBuffer, Registry], Gate],
             run_dir: Path, exclude: Sequence[Tool] = (), max_arg_tokens: int = 256, k: int = 10) -> dict[str, Any]:
    """Route `limit` queries (distinct gold tools) over a registry of `size` tools; rows and result into `run_dir`."""
    if exclude:
        tools, queries = exclude_queries(tools, queries, exclude)
    cases = build_cases(tools, queries, [size], limit, seed)
    if not cases or not cases[0].queries:
        from nexus.errors import NexusError

        raise NexusError("no queries left to score; check --tools/--queries (and --exclude-tools)")
    case = cases[0]
    registry = Registry()
    registry.set_source("bench", case.tools)
    slb.sync(registry)
    router = Router(registry, slb, gate_for(slb, registry), backend, k=k, max_arg_tokens=max_arg_tokens)
    rows = score_rows(case, run_nexus(case, router))
    write_jsonl(run_dir / "rows.jsonl", rows)
    result = {"n_tools": case.n_tools, **summarise_args(rows)}
    (run_dir / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result
