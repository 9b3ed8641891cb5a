"""Durations, sizes and percentages written the way people write them.

Stdlib only: the in-loop shim imports this module.

    parse_duration("90s") == 90.0      parse_duration("1h30m") == 5400.0
    parse_size("500GiB") == 500 * 2**30 parse_size("1.5TB") == 1.5e12
    parse_percent("80%") == 80.0
"""

from __future__ import annotations

import math
import re
import time
from decimal import Decimal

_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "sec": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 7 * 86400.0,
}
# ASCII only: `\d` would accept full-width and other Unicode digits, which float() converts.
_DURATION_PART = re.compile(
    r"(?<![0-9.])(\d{1,40}(?:\.\d{1,40})?)\s{0,8}(ms|sec|min|s|m|h|d|w)", re.IGNORECASE | re.ASCII
)
_NUMBER = re.compile(r"\d{1,40}(?:\.\d{1,40})?", re.ASCII)
#: Larger values are typos (or overflow attempts): 100 years, 1 EiB.
MAX_DURATION = 100 * 365 * 86400.0
MAX_SIZE = 2**60

#: Size suffixes (lower case) -> bytes: `k`, `kb` decimal (1000), `kib` binary (1024), to peta.
_SIZE_UNITS = {"": 1, "b": 1} | {
    name: base**n
    for n, p in enumerate("kmgtp", 1)
    for name, base in ((p, 1000), (p + "b", 1000), (p + "ib", 1024))
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$", re.ASCII)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%?\s*$", re.ASCII)


class UnitError(ValueError):
    """A value that is not a valid duration, size or percentage."""


def parse_duration(text: str | float | int) -> float:
    """Seconds in `text`: `90s`, `30m`, `4h`, `7d`, `1h30m`, `250ms`; a bare number is seconds."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        return _bounded(float(text), text, "duration", MAX_DURATION, "100 years")
    s = text.strip()
    if len(s) > 100:
        raise UnitError(f"not a duration: {s[:40]!r}... (too long)")
    if _NUMBER.fullmatch(s):
        return _bounded(float(s), text, "duration", MAX_DURATION, "100 years")
    pos, total = 0, 0.0
    compact = s.replace(" ", "")
    for m in _DURATION_PART.finditer(compact):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]
        pos = m.end()
    if pos != len(compact) or not compact:
        raise UnitError(f"not a duration: {text!r} (write e.g. 90s, 30m, 4h, 7d, 1h30m)")
    return _bounded(total, text, "duration", MAX_DURATION, "100 years")


def _bounded(value: float, text: object, what: str, limit: float, words: str) -> float:
    """`value` when finite and in 0..limit; else UnitError naming `text`."""
    if not math.isfinite(value):
        raise UnitError(f"{what} must be a finite number: {text!r}")
    if value < 0:
        raise UnitError(f"{what} must not be negative: {text!r}")
    if value > limit:
        raise UnitError(f"{what} {text!r} is absurdly large (more than {words})")
    return value


def parse_size(text: str | int | float) -> int:
    """Bytes in `text`: `500GiB`, `5TiB`, `1.5TB`, `100M`; a bare number is bytes."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"not a size: {text!r}")
    if isinstance(text, (int, float)):
        return int(_bounded(float(text), text, "size", MAX_SIZE, "1 EiB"))
    m = _SIZE.match(text) if len(text) <= 100 else None
    unit = m.group(2).lower() if m else None
    if not m or unit not in _SIZE_UNITS:
        raise UnitError(f"not a size: {text[:60]!r} (write e.g. 500GiB, 5TiB, 1.5TB)")
    return int(_bounded(float(m.group(1)) * _SIZE_UNITS[unit], text, "size", MAX_SIZE, "1 EiB"))


def parse_percent(text: str | int | float) -> float:
    """Percent in `text` (`80%`, `80`), between 0 and 100."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"not a percentage: {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
        if not math.isfinite(value):
            raise UnitError(f"percentage must be a finite number: {text!r}")
    else:
        m = _PERCENT.match(text) if len(text) <= 100 else None
        if not m:
            raise UnitError(f"not a percentage: {text!r} (write e.g. 80%)")
        value = float(m.group(1))
    if not 0.0 <= value <= 100.0:
        raise UnitError(f"percentage out of range 0-100%: {text!r}")
    return value


def format_duration(seconds: float) -> str:
    """Short human form: `45s`, `12m`, `3h20m`, `2d4h`."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h}h{m:02d}m" if m else f"{h}h"
    d, h = divmod(s // 3600, 24)
    return f"{d}d{h}h" if h else f"{d}d"


def exact_duration(seconds: float) -> str:
    """A duration written so that `parse_duration` gives exactly `seconds` back: `1m30s`,
    `1h30m`, `7d`, `0.25s`, `90.5s` (config show)."""
    if seconds != int(seconds):
        return f"{_plain(seconds)}s"
    rest, parts = int(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def exact_size(n: int) -> str:
    """A size written so that `parse_size` gives exactly `n` back: `500GiB`, `1TB`, `1500B`."""
    units = ("PiB", "TiB", "GiB", "MiB", "KiB", "PB", "TB", "GB", "MB", "KB")
    sizes = [(_SIZE_UNITS[u.lower()], u) for u in units]
    exact = [(n // size, u) for size, u in sizes if n and n % size == 0]
    count, unit = min(exact, default=(n, "B"))
    return f"{count}{unit}"


def exact_percent(value: float) -> str:
    """`80%`, `12.5%` (every digit kept)."""
    return f"{_plain(value)}%"


def _plain(value: float) -> str:
    """The shortest decimal that reads back as `value`, never in exponent form."""
    if value == int(value):
        return str(int(value))
    return format(Decimal(repr(float(value))), "f")


def format_when(t: object, now: float, missing: str = "never") -> str:
    """A Unix time as `2024-05-01 10:00:00 (12m ago)` or `(in 48m)`; `missing` when `t` is not
    a positive number."""
    if not isinstance(t, (int, float)) or t <= 0:
        return missing
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    delta = now - t
    rel = f"{format_duration(abs(delta))} ago" if delta >= 0 else f"in {format_duration(-delta)}"
    return f"{stamp} ({rel})"


def format_size(n: float) -> str:
    """Binary units: `512B`, `1.5KiB`, `3.2GiB`."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024:
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}PiB"
