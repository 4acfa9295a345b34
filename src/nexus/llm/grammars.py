"""GBNF grammars that constrain decoding: a tool's arguments (from its JSON Schema) and a choice of names.

Arguments follow `Arguments:` in the prompt, so the grammar starts with one space, then the JSON object
llama.cpp's own JSON-Schema converter describes (required keys first, optional keys in schema order,
no keys the schema does not define).

>>> print(arguments_gbnf({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}).splitlines()[-1])
root ::= " " arguments
>>> choice_gbnf(["a", 'b"c'])
'root ::= " a" | " b\\\\"c"'
"""

from __future__ import annotations

import copy
import json
import logging
import re
from functools import lru_cache
from typing import Any, Mapping, Sequence

log = logging.getLogger(__name__)
_ROOT_REF = re.compile(r"(?<![\w-])root(?![\w-])")


def _gbnf_literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def normalise_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy the converter handles as the tool means it: a parameterless object is exactly `{}`."""
    out = copy.deepcopy(dict(schema))
    out.setdefault("type", "object")
    if out.get("type") == "object" and "properties" not in out and not out.get("additionalProperties"):
        out["properties"] = {}
    required = out.get("required")
    if isinstance(required, list):  # the converter fails on required keys that are not properties
        out["required"] = [name for name in required if name in (out.get("properties") or {})]
    return out


@lru_cache(maxsize=4096)
def _arguments_gbnf(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        body = json_schema_to_gbnf(schema_json)
    except Exception as exc:  # noqa: BLE001 - the converter raises bare exceptions on odd schemas
        # Still JSON, just not schema-shaped: jsonschema validation and the repair step catch the rest.
        log.warning("no exact grammar for this schema (%s); constraining to any JSON object", exc)
        body = json_schema_to_gbnf(json.dumps({"type": "object"}))
    lines = []
    for line in body.splitlines():
        name, sep, rule = line.partition(" ::= ")
        name = "arguments" if name == "root" else name
        lines.append(f"{name}{sep}{_ROOT_REF.sub('arguments', rule)}")
    lines.append('root ::= " " arguments')
    return "\n".join(sorted(lines[:-1]) + lines[-1:]) + "\n"


def arguments_gbnf(schema: Mapping[str, Any]) -> str:
    """GBNF for `" " + <JSON arguments conforming to schema>` (cached by schema content)."""
    return _arguments_gbnf(json.dumps(normalise_schema(schema), sort_keys=False, ensure_ascii=False))


def choice_gbnf(options: Sequence[str]) -> str:
    """GBNF for exactly one of `options`, each preceded by a space (for servers without token-level control)."""
    if not options:
        raise ValueError("choice_gbnf needs at least one option")
    return "root ::= " + " | ".join(_gbnf_literal(" " + option) for option in options)
