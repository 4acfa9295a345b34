"""A dict-backed registry of tools from many sources, with collision namespacing and diffs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from nexus.errors import NexusError
from nexus.registry.tool import Tool


@dataclass(frozen=True)
class RegistryDiff:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.updated)


@dataclass
class Registry:
    """Tools keyed by their public name.

    A name offered by two sources is never dropped: both copies are published as
    `origin.name`. The key may therefore change when a colliding source arrives;
    `Tool.name` always keeps the name the server itself knows.

    >>> r = Registry()
    >>> _ = r.set_source("a", [Tool("ping", "", {"type": "object"}, "a")])
    >>> _ = r.set_source("b", [Tool("ping", "", {"type": "object"}, "b")])
    >>> sorted(r.keys()), r.source_of("b.ping")
    (['a.ping', 'b.ping'], 'b')
    """

    _sources: dict[str, dict[str, Tool]] = field(default_factory=dict)
    _by_key: dict[str, Tool] = field(default_factory=dict)
    _source_of: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _hash: str | None = field(default=None, repr=False, compare=False)
    _tables: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    def set_source(self, origin: str, tools: Iterable[Tool]) -> RegistryDiff:
        """Replace everything from `origin` with `tools` and return what changed (by key and hash)."""
        tools = list(tools)
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise NexusError(f"source {origin!r}: duplicate tool names")
        before = {k: t.content_hash for k, t in self._by_key.items()}
        self._sources[origin] = {t.name: t for t in tools}
        self._rebuild()
        return self._diff(before)

    def remove_source(self, origin: str) -> RegistryDiff:
        before = {k: t.content_hash for k, t in self._by_key.items()}
        self._sources.pop(origin, None)
        self._rebuild()
        return self._diff(before)

    def _rebuild(self) -> None:
        # Keys are public names: a name outside the MCP character set is published as its safe alias.
        owners: dict[str, list[str]] = {}
        for origin, tools in self._sources.items():
            for tool in tools.values():
                owners.setdefault(tool.public_name, []).append(origin)
        self._by_key, self._source_of = {}, {}
        for origin, tools in self._sources.items():
            for tool in tools.values():
                name = tool.public_name
                key = name if len(owners[name]) == 1 else f"{origin}.{name}"
                self._by_key[key] = tool
                self._source_of[key] = origin
        self._hash = self._tables = None

    def _diff(self, before: dict[str, str]) -> RegistryDiff:
        after = {k: t.content_hash for k, t in self._by_key.items()}
        return RegistryDiff(
            added=tuple(sorted(after.keys() - before.keys())),
            removed=tuple(sorted(before.keys() - after.keys())),
            updated=tuple(sorted(k for k in after.keys() & before.keys() if after[k] != before[k])),
        )

    def get(self, key: str) -> Tool:
        try:
            return self._by_key[key]
        except KeyError:
            raise NexusError(f"no tool {key!r} in the registry") from None

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def keys(self) -> list[str]:
        return list(self._by_key)

    def items(self) -> list[tuple[str, Tool]]:
        return list(self._by_key.items())

    def name_index(self) -> dict[str, str]:
        """Tool names (and keys) to registry keys; a bare name offered by two sources maps to nothing."""
        by_name: dict[str, list[str]] = {}
        for key, tool in self._by_key.items():
            by_name.setdefault(tool.name, []).append(key)
            if tool.public_name != tool.name:
                by_name.setdefault(tool.public_name, []).append(key)
        mapping = {name: keys[0] for name, keys in by_name.items() if len(keys) == 1}
        mapping.update({key: key for key in self._by_key})
        return mapping

    def sources(self) -> list[str]:
        return list(self._sources)

    def source_of(self, key: str) -> str:
        """The source (server) that offers the tool at `key`."""
        self.get(key)  # an unknown key is the same clear error
        return self._source_of[key]

    def source_tools(self, origin: str) -> list[Tool]:
        """The tools `origin` offers, as it named them (empty for an unknown source)."""
        return list(self._sources.get(origin, {}).values())

    def tables(self) -> tuple[str, ...]:
        """The tables the registry's servers said their databases hold (`Tool.tables`, learnt at connect time);
        computed once per change, not per turn."""
        if self._tables is None:
            self._tables = tuple(dict.fromkeys(name for tool in self._by_key.values() for name in tool.tables))
        return self._tables

    def content_hash(self) -> str:
        """One hash of every key and tool; computed once per change, not per call."""
        if self._hash is None:
            h = hashlib.sha256()
            for key in sorted(self._by_key):
                h.update(f"{key}\0{self._by_key[key].content_hash}\n".encode())
            self._hash = h.hexdigest()
        return self._hash
