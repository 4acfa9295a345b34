"""The tool value object and the checks every tool passes before it enters a registry."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from jsonschema import exceptions as js_exceptions
from jsonschema import validators

from nexus.errors import ToolLoadError

MAX_NAME_CHARS = 128
# A description longer than this is not documentation but payload (or an attack on the
# context window); we refuse it instead of silently truncating what the LLM would read.
MAX_DESCRIPTION_CHARS = 16_384
MAX_SCHEMA_BYTES = 256 * 1024


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Tool:
    """One callable tool.

    >>> t = Tool("get_time", "Current time", {"type": "object", "properties": {}}, "time")
    >>> len(t.content_hash), t.id.startswith("time/")
    (64, True)
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(hash=False)
    origin: str = ""

    @property
    def content_hash(self) -> str:
        payload = canonical_json([self.name, self.description, self.input_schema])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @property
    def id(self) -> str:
        """Stable across runs and content changes: where it came from and what it is called."""
        return f"{self.origin}/{self.name}"

    def to_mcp(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}


def check_tool(raw: Any, origin: str, where: str) -> Tool:
    """Validate one raw `{name, description, inputSchema}` mapping and build a Tool.

    `where` names the file/server and position for the error message.
    """
    if not isinstance(raw, Mapping):
        raise ToolLoadError(f"{where}: a tool must be a JSON object, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolLoadError(f"{where}: tool has no name (every tool needs a non-empty 'name')")
    if len(name) > MAX_NAME_CHARS or any(c.isspace() or not c.isprintable() for c in name):
        raise ToolLoadError(f"{where}: tool name {name[:60]!r} must be <= {MAX_NAME_CHARS} printable chars without spaces")
    where = f"{where} (tool {name!r})"
    description = raw.get("description") or ""
    if not isinstance(description, str):
        raise ToolLoadError(f"{where}: 'description' must be a string")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise ToolLoadError(
            f"{where}: description is {len(description):,} chars, over the {MAX_DESCRIPTION_CHARS:,} limit; shorten it"
        )
    schema = raw.get("inputSchema", raw.get("input_schema"))
    if schema is None:
        schema = {"type": "object", "properties": {}}
    check_schema(schema, where)
    return Tool(name=name, description=description.strip(), input_schema=schema, origin=origin)


def check_schema(schema: Any, where: str) -> None:
    """Refuse anything that is not a valid JSON Schema for an object of arguments."""
    if not isinstance(schema, Mapping):
        raise ToolLoadError(f"{where}: inputSchema must be a JSON object, got {type(schema).__name__}")
    if len(canonical_json(schema).encode("utf-8")) > MAX_SCHEMA_BYTES:
        raise ToolLoadError(f"{where}: inputSchema is over {MAX_SCHEMA_BYTES // 1024} KiB")
    kind = schema.get("type", "object")
    if kind != "object":
        raise ToolLoadError(f"{where}: inputSchema type must be 'object', got {kind!r}")
    declared = validators.validator_for(schema, default=None) if "$schema" in schema else None
    # Without `$schema`, real servers emit draft-04/07 idioms (e.g. boolean exclusiveMinimum): accept any common draft.
    candidates = [declared] if declared else [validators.Draft202012Validator, validators.Draft7Validator, validators.Draft4Validator]
    first_error = None
    for validator in candidates:
        try:
            validator.check_schema(schema)
            return
        except js_exceptions.SchemaError as exc:
            first_error = first_error or exc
    path = "/".join(str(p) for p in first_error.absolute_path) or "(root)"
    raise ToolLoadError(f"{where}: inputSchema is not valid JSON Schema at {path}: {first_error.message}")
