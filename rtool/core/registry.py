"""One registry for every kind of plug-in: watchdog, pre-flight check, failure signature, channel,
config section, command.

A kind lists its plug-ins in one table, in order: `name: "module:attribute"` (or `"module"` for
a plug-in that is a module), or `name: Line("module", "summary")` where a listing shows a summary
without importing the plug-in (commands). A plug-in is imported when first asked for, so
`rtool watch disk` imports the disk watchdog alone. One that carries its own name (`name` or
`NAME`) must carry its line's name.

    CHANNELS = Registry("channel", {"slack": "rtool.notify.channels.slack:SlackChannel"})
    CHANNELS["slack"]  # imports rtool.notify.channels.slack alone; .get("x"): None if no line
    CHANNELS.names()   # imports nothing
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class Line(NamedTuple):
    """A registry line with a summary a listing shows without importing the plug-in."""

    where: str
    summary: str = ""
    hidden: bool = False  # left out of listings (a plug-in rtool runs itself)


def load(where: str) -> Any:
    """The object `module:attribute` names (the module itself when there is no attribute)."""
    module, _, attr = where.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attr) if attr else found


class Registry(Mapping[str, T]):
    """The plug-ins of one kind: `name -> "module[:attribute]"`, each imported when first
    looked up (`registry[name]`, `registry.get(name)`); `names()` imports nothing."""

    def __init__(self, kind: str, lines: Mapping[str, str | Line]) -> None:
        self.kind = kind
        self.lines: dict[str, Line] = {
            name: line if isinstance(line, Line) else Line(line) for name, line in lines.items()
        }
        self._loaded: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        """The plug-in `name`; imports its module (alone) the first time. KeyError: no such
        line; ValueError: the plug-in calls itself by another name."""
        if name not in self._loaded:
            where = self.lines[name].where
            found = load(where)
            own = getattr(found, "name", None) or getattr(found, "NAME", None)
            if isinstance(own, str) and own != name:
                raise ValueError(f"{self.kind} line {name!r} loads {own!r} ({where})")
            self._loaded[name] = found
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:  # without importing it
        return name in self.lines

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def names(self) -> list[str]:
        return list(self.lines)

    def line(self, name: str) -> Line:
        """The line of `name` (its summary, whether hidden), without importing it."""
        return self.lines[name]

    def all(self) -> tuple[T, ...]:
        """Every plug-in, in the order of the lines (imports them all)."""
        return tuple(self[name] for name in self.lines)

    def plus(self, lines: Mapping[str, str | Line]) -> Registry[T]:
        """A registry of these lines and `lines` after them (a test's extra plug-in)."""
        return Registry(self.kind, {**self.lines, **lines})
