"""Which config files are read, and how they merge into one (stdlib only).

Without `--config` (repeatable) or `$RTOOL_CONFIG` (paths joined by `:`), which name exactly the
files to read, there are two layers: the user's `~/.config/rtool/rtool.toml`, then the project's
`./rtool.toml`. Files merge in order: a table key by key, a later file's key winning; an array of
tables (`[[watch.disk]]`, any `[[...]]`) is extended, an entry identical to one already there
kept once; any other value is replaced whole (a string, a number, an array of strings, and an
empty array: `disk = []` under `[watch]` drops the earlier files' entries). `origin(path)` says
where a merged value came from: the file and, best effort, its line.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A key path into the merged data: `("watch", "disk", 0, "max_used")`.
KeyPath = tuple[str | int, ...]

PROJECT_FILE = Path("rtool.toml")


def user_file() -> Path:
    """The user's config file (read first when no file is named)."""
    return Path.home() / ".config" / "rtool" / "rtool.toml"


def config_files(explicit: Sequence[str | Path] = ()) -> list[Path]:
    """The config files to read, in order (later ones win); [] means built-in defaults. A
    file named by `explicit` or `$RTOOL_CONFIG` that is missing is an error when it is read."""
    if explicit:
        return [Path(p).expanduser() for p in explicit]
    env = os.environ.get("RTOOL_CONFIG", "")
    if env.strip():
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p.strip()]
    found = [p for p in (user_file(), PROJECT_FILE) if p.is_file()]
    if len(found) == 2 and _same(*found):
        found = found[1:]  # run from ~/.config/rtool: one file, read once
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a file (and its line), or the built-in default."""

    file: str | None
    line: int | None = None

    def __str__(self) -> str:
        if self.file is None:
            return "default"
        return f"{self.file}:{self.line}" if self.line else self.file


DEFAULT = Origin(None)


@dataclass
class Layer:
    """One file as read: its path (as given), its text and its parsed data."""

    path: Path
    text: str
    data: dict[str, Any]


@dataclass
class Layered:
    """The merged data of several layers and, for every value, which layer gave it."""

    layers: list[Layer] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    #: key path -> (layer index, the key path inside that layer's own data)
    sources: dict[KeyPath, tuple[int, KeyPath]] = field(default_factory=dict)

    def add(self, layer: Layer) -> None:
        self.layers.append(layer)
        _merge(self, self.data, layer.data, (), (), len(self.layers) - 1)

    def origin(self, path: KeyPath) -> Origin:
        """Where the value at `path` (or the nearest table or entry above it) came from."""
        for end in range(len(path), 0, -1):
            hit = self.sources.get(tuple(path[:end]))
            if hit is not None:
                index, local = hit
                layer = self.layers[index]
                local = local + tuple(path[end:])
                return Origin(str(layer.path), locate(layer.text, local))
        return DEFAULT

    def given(self, path: KeyPath) -> bool:
        return tuple(path) in self.sources


def is_tables(value: Any) -> bool:
    """An array of tables (`[[watch.disk]]`): a non-empty list of dicts."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _merge(
    out: Layered, into: dict[str, Any], new: dict[str, Any], at: KeyPath, local: KeyPath, i: int
) -> None:
    for key, value in new.items():
        path, here = (*at, key), (*local, key)
        old = into.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            out.sources[path] = (i, here)
            _merge(out, old, value, path, here, i)
        elif isinstance(old, list) and is_tables(value) and is_tables(old):
            for n, entry in enumerate(value):
                if entry in old:
                    continue  # the same entry in two files: watched once
                old.append(copy.deepcopy(entry))
                _record(out, (*path, len(old) - 1), (*here, n), entry, i)
        else:
            for known in [k for k in out.sources if k[: len(path)] == path]:
                del out.sources[known]
            into[key] = copy.deepcopy(value)
            _record(out, path, here, value, i)


def _record(out: Layered, path: KeyPath, local: KeyPath, value: Any, i: int) -> None:
    out.sources[path] = (i, local)
    if isinstance(value, dict):
        for k, v in value.items():
            _record(out, (*path, k), (*local, k), v, i)
    elif is_tables(value):
        for n, v in enumerate(value):
            _record(out, (*path, n), (*local, n), v, i)


# -- the line of a key, best effort (TOML parsers do not keep positions) ----------------------
def locate(text: str, path: KeyPath) -> int | None:
    """The 1-based line of the key at `path` in `text` (a table's or an entry's header line when
    the key itself is not found; None when nothing is)."""
    lines = text.splitlines()
    table: list[str] = []
    start, best = -1, None
    parts = list(path)
    i = 0
    while i < len(parts):
        if isinstance(parts[i], int):
            i += 1
            continue
        run = i
        while run < len(parts) and isinstance(parts[run], str):
            run += 1
        for end in range(run, i, -1):  # the longest table header first: [notify.slack]
            nth = parts[end] if end < len(parts) else None
            names = [*table, *(str(p) for p in parts[i:end])]
            header = _header(lines, names, nth if isinstance(nth, int) else None)
            if header is not None:
                table, start, best = names, header, header + 1
                i = end + (1 if isinstance(nth, int) else 0)
                break
        else:
            found = _key_line(lines, start, str(parts[i]))
            return found + 1 if found is not None else best
    return best


def _header(lines: list[str], table: list[str], nth: int | None) -> int | None:
    """The line of `[a.b]`, or of the `nth` `[[a.b]]` (0-based)."""
    name = r"\s*\.\s*".join(re.escape(t) for t in table)
    pattern = re.compile(rf"^\s*(\[\[|\[)\s*{name}\s*(\]\]|\])\s*(#.*)?$")
    seen = -1
    for n, line in enumerate(lines):
        m = pattern.match(line)
        if not m:
            continue
        if nth is None:
            return n
        if m.group(1) == "[[":
            seen += 1
            if seen == nth:
                return n
    return None


def _key_line(lines: list[str], start: int, key: str) -> int | None:
    """The line of `key = ...` in the table whose header is at `start` (-1: the top level)."""
    pattern = re.compile(rf"""^\s*(["']?){re.escape(key)}\1\s*(=|\.)""")
    for n in range(start + 1, len(lines)):
        if lines[n].lstrip().startswith("["):
            break
        if pattern.match(lines[n]):
            return n
    return None
