"""The effective config as data and as TOML that reads back (`rtool config show`).

- A value a file gave is shown as written there (`90s` stays `90s`); every other key shows its
  default, written exactly (`1h30m`, `0.5s`), so the output validates to the same config.
- A key without a value (None) is left out: TOML has no null, and leaving it out means the same.
- Secrets are masked (`***`), and `rtool config check` refuses a masked value given back.
- `origins` adds a comment per value: the file and line it came from, or `default`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rtool.core.config.layers import KeyPath, Layered, is_tables
from rtool.core.redact import MASK, redact

if TYPE_CHECKING:
    from pydantic import BaseModel

_MISSING = object()
#: Keys whose value is itself a secret (not the name of its env var or file).
_SECRETISH = re.compile(r"(password|passwd|token|secret|webhook_url|ping_url|api_key)$")
#: Header values shown as they are; any other header may carry a credential.
_PLAIN_HEADERS = {"content-type", "accept", "user-agent"}


def effective(model: BaseModel, layered: Layered) -> dict[str, Any]:
    """The validated `model` as plain data, each value as the files wrote it where they did."""
    dumped = model.model_dump(mode="json")
    out = _pick(dumped, layered.data)
    return out if isinstance(out, dict) else {}


def _pick(dumped: Any, raw: Any) -> Any:
    if isinstance(dumped, dict):
        sub = raw if isinstance(raw, dict) else {}
        return {
            k: _pick(v, sub.get(k, _MISSING))
            for k, v in dumped.items()
            if v is not None or k in sub
        }
    if isinstance(dumped, list) and dumped and all(isinstance(v, dict) for v in dumped):
        entries = raw if isinstance(raw, list) and len(raw) == len(dumped) else []
        return [_pick(v, entries[n] if entries else _MISSING) for n, v in enumerate(dumped)]
    return dumped if raw is _MISSING else raw


def masked(data: Any, at: KeyPath = ()) -> Any:
    """`data` with every secret value masked: keys that hold one, header values, and whatever
    `rtool.core.redact` finds in a string (tokens in URLs, known secrets)."""
    if isinstance(data, dict):
        return {k: _mask_value(k, v, (*at, k)) for k, v in data.items()}
    if isinstance(data, list):
        return [masked(v, (*at, n)) for n, v in enumerate(data)]
    return redact(data) if isinstance(data, str) else data


def _mask_value(key: str, value: Any, at: KeyPath) -> Any:
    in_headers = len(at) >= 2 and at[-2] == "headers"
    secret = _SECRETISH.search(key) or (in_headers and key.lower() not in _PLAIN_HEADERS)
    if secret and isinstance(value, str) and value:
        return MASK
    return masked(value, at)


def to_toml(data: dict[str, Any], origin: Callable[[KeyPath], str] | None = None) -> str:
    """`data` as a TOML document (tables and arrays of tables, never inline JSON); with
    `origin`, each value and entry carries a comment saying where it came from."""
    import tomlkit

    doc = tomlkit.document()
    _fill(doc, data, (), origin)
    return tomlkit.dumps(doc)


def _fill(table: Any, data: dict[str, Any], at: KeyPath, origin: Any) -> None:
    import tomlkit

    later = []
    for key, value in data.items():
        if isinstance(value, dict) or is_tables(value):
            later.append((key, value))
            continue
        item = tomlkit.item(value)
        if origin is not None:
            item.comment(origin((*at, key)))
        table.add(key, item)
    for key, value in later:
        if isinstance(value, dict):
            if not value:
                continue
            sub = tomlkit.table()
            _fill(sub, value, (*at, key), origin)
            table.add(key, sub)
            continue
        aot = tomlkit.aot()
        for n, entry in enumerate(value):
            sub = tomlkit.table()
            _fill(sub, entry, (*at, key, n), origin)
            if origin is not None:
                sub.comment(origin((*at, key, n)))
            aot.append(sub)
        table.add(key, aot)


def origin_of(layered: Layered) -> Callable[[KeyPath], str]:
    """The comment of a value: `from FILE:LINE` where a file gave it, else `default`."""

    def comment(path: KeyPath) -> str:
        return f"from {layered.origin(path)}" if layered.given(path) else "default"

    return comment


def origins_map(data: dict[str, Any], layered: Layered) -> dict[str, str]:
    """{dotted key: origin} of every value in `data` (for `config show --json --origin`)."""
    out: dict[str, str] = {}
    comment = origin_of(layered)

    def walk(obj: Any, at: KeyPath) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, (*at, k))
        elif is_tables(obj):
            for n, v in enumerate(obj):
                walk(v, (*at, n))
        else:
            out[".".join(str(p) for p in at)] = comment(at).removeprefix("from ")

    walk(data, ())
    return out
