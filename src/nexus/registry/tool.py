"""The tool value object and the checks every tool passes before it enters a registry."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

from jsonschema import exceptions as js_exceptions
from jsonschema import validators

from nexus.errors import NexusError, ToolLoadError

log = logging.getLogger(__name__)
MAX_NAME_CHARS = 128
# The MCP tool-name character set (and OpenAI's, but for the dot). A name outside it ("get weather", "fs/read",
# "météo") is kept as the server knows it (`Tool.name`) and published under a safe alias (`Tool.public_name`).
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
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
    >>> t.id, len(t.content_hash)
    ('time/get_time', 64)
    >>> Tool("get_time", "Current time!", {"type": "object", "properties": {}}, "time").content_hash == t.content_hash
    False
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(hash=False)
    origin: str = ""
    # MCP tool annotations as the server sent them (readOnlyHint, destructiveHint, ...): hints about what a call does,
    # not part of what the tool is (left out of `content_hash`)
    annotations: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # parameters the set-up fills at call time, taken out of the schema the model sees (the demo pins mcp-server-git's
    # `repo_path`), with their values: a request that writes such a value has not written a path for the model to place
    pinned: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # the tables its server's database holds and their columns ({} where unknown), learnt at connect time from the
    # server's table lister (`registry.tables`): routing reads "Show all notes ..." as rows of `notes`, and a statement's
    # grammar names only their columns; not part of what the tool is
    tables: Mapping[str, Mapping[str, str]] = field(default_factory=dict, hash=False, compare=False)  # column -> type

    @cached_property
    def content_hash(self) -> str:
        """Computed once per tool (the schema is treated as immutable once the tool exists)."""
        payload = canonical_json([self.name, self.description, self.input_schema])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @cached_property
    def public_name(self) -> str:
        """The name the registry, the LLM and clients see: `name` itself when it is in the MCP character set,
        else a stable safe alias (`safe_alias`)."""
        return self.name if SAFE_NAME.match(self.name) else safe_alias(self.name)

    @property
    def id(self) -> str:
        """Stable across runs and content changes: where it came from and what it is called."""
        return f"{self.origin}/{self.name}"

    @property
    def read_only(self) -> bool | None:
        """The server's `readOnlyHint`: True (the tool only reads), False (it changes something), None (not said)."""
        hint = self.annotations.get("readOnlyHint")
        return hint if isinstance(hint, bool) else None

    @property
    def destructive(self) -> bool:
        """The server says a call may destroy data (`destructiveHint: true` on a tool not marked read-only). A tool
        that says nothing is not counted: the MCP default (destructive unless read-only) would cover every BFCL or
        OpenAI function, which carry no annotations at all."""
        return self.annotations.get("destructiveHint") is True and self.read_only is not True

    def to_mcp(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


def safe_alias(name: str) -> str:
    """A name in the MCP character set standing for `name`: accents dropped, other characters as `_`, and a short
    hash of the original so two odd names never share an alias.

    >>> safe_alias("get weather"), safe_alias("météo/prévision")
    ('get_weather_dce387', 'meteo_prevision_e380c8')
    """
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_text).strip("_")[:48] or "tool"
    return f"{stem}_{hashlib.sha256(name.encode('utf-8')).hexdigest()[:6]}"


def check_tool(raw: Any, origin: str, where: str) -> Tool:
    """Validate one raw `{name, description, inputSchema}` mapping and build a Tool.

    `where` names the file/server and position for the error message.
    """
    if not isinstance(raw, Mapping):
        raise ToolLoadError(f"{where}: a tool must be a JSON object, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolLoadError(f"{where}: tool has no name (every tool needs a non-empty 'name')")
    if len(name) > MAX_NAME_CHARS:
        raise ToolLoadError(f"{where}: tool name {name[:60]!r}... is over {MAX_NAME_CHARS} characters")
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
    annotations = raw.get("annotations")
    if annotations is not None and not isinstance(annotations, Mapping):
        log.warning("%s: 'annotations' is not an object; ignored", where)
    hints = {k: v for k, v in annotations.items() if isinstance(k, str)} if isinstance(annotations, Mapping) else {}
    tool = Tool(name=name, description=description.strip(), input_schema=schema, origin=origin, annotations=hints)
    if tool.public_name != name:
        log.warning("%s: the name is outside the MCP character set [A-Za-z0-9_.-]{1,64}; published as %r",
                    where, tool.public_name)
    return tool


def arguments_validator(schema: Mapping[str, Any]) -> Any:
    """A validator of a call's arguments against the tool's full schema. Its resource registry is empty: a `$ref`
    resolves within the schema (or to a JSON Schema metaschema), never by fetching a URL a server wrote into it."""
    from referencing import Registry as Resources

    return validators.validator_for(schema, default=validators.Draft202012Validator)(schema, registry=Resources())


def first_argument_error(validator: Any, arguments: Any) -> str | None:
    """The shallowest problem of `arguments` ("where: message"), None when they are valid; NexusError when the schema
    has a `$ref` that does not resolve within it.

    >>> first_argument_error(arguments_validator({"type": "object", "properties": {"a": {"type": "string"}}}), {"a": 1})
    "a: 1 is not of type 'string'"
    """
    from referencing.exceptions import Unresolvable

    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: (len(e.path), e.message))
    except Unresolvable as exc:
        raise NexusError(f"its inputSchema has a $ref that does not resolve within the schema ({exc})") from None
    if not errors:
        return None
    where = "/".join(str(p) for p in errors[0].absolute_path)
    return f"{where + ': ' if where else ''}{errors[0].message}"


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
