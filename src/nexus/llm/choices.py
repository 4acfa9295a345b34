"""The values a parameter may take by its schema: its enum, else the values its description quotes.

>>> closed_choices({"type": "string", "description": "One of 'metric' or 'imperial'"})
['metric', 'imperial']
"""

from __future__ import annotations

import re
from typing import Any, Mapping

_QUOTED = re.compile(r"'([^']{1,40})'|\"([^\"]{1,40})\"")
_NOT_A_CHOICE = frozenset(("true", "false", "dontcare", "none", "null", "", "all", "any", "default"))


def schema_choices(schema: Mapping[str, Any]) -> list[str]:
    """The values a string parameter (or a list's items) may take: its enum, else the quoted examples its
    description gives ("'metric' or 'imperial'")."""
    out: list[str] = []
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
    for sub in (schema, items):
        if isinstance(sub.get("enum"), list):
            out += [v for v in sub["enum"] if isinstance(v, str)]
    if not out and schema.get("type") in ("string", "array", None):
        out += _quoted(schema)
    return [o for o in out if o.strip().lower() not in _NOT_A_CHOICE]


def _quoted(schema: Mapping[str, Any]) -> list[str]:
    """The values a parameter's description quotes, in order."""
    return [a or b for a, b in _QUOTED.findall(str(schema.get("description", "")))]


_CLOSED_SET = re.compile(r"\b(whether|one of|either|must be|allowed values|valid values|possible values)\b", re.I)
_OPEN_SET = re.compile(r"\b(e\.g|eg|for example|for instance|such as|like|etc|example|examples|including)\b", re.I)


def closed_choices(schema: Mapping[str, Any]) -> list[str]:
    """The values a string parameter's description lists as the only ones it takes (no enum): at least two quoted,
    with a closed-set cue ("whether", "one of", "either", "must be", "valid values") and no sign of examples ("e.g.",
    "such as", "etc."). Sentinels count here ('all', 'any'): they are real values of such a list.

    >>> closed_choices({"type": "string", "description": "Whether to list local branches ('local'), remote branches ('remote') or all branches('all')."})
    ['local', 'remote', 'all']
    >>> closed_choices({"type": "string", "description": "Time zone, e.g. 'UTC' or 'Europe/Paris'"}), closed_choices({"type": "string", "description": "One of 'a'"})
    ([], [])
    """
    description = str(schema.get("description", ""))
    if schema.get("type") != "string" or "enum" in schema or not _CLOSED_SET.search(description) or _OPEN_SET.search(description):
        return []
    listed = list(dict.fromkeys(_quoted(schema)))
    return listed if len(listed) >= 2 and all(value.strip() for value in listed) else []
