"""Option parsing of the in-loop shim: RTOOL_* environment variables and keyword values.

Stdlib + rtool.core.units only. Every bad value raises ShimConfigError naming the option.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable, Mapping
from typing import Any

from rtool.core.units import UnitError, parse_duration, parse_percent, parse_size

#: RTOOL_* variable -> Guard keyword (values parsed by Guard like keyword values).
ENV_OPTIONS = {
    "RTOOL_KILL_SWITCH": "kill_switch",
    "RTOOL_SAVE_SWITCH": "save_switch",
    "RTOOL_HEARTBEAT": "heartbeat",
    "RTOOL_EXIT_BEFORE_END": "exit_before_end",
    "RTOOL_SIGNALS": "signals",
    "RTOOL_MAX_MEMORY_USED": "max_memory_used",
    "RTOOL_MIN_GPU_FREE": "min_gpu_free",
    "RTOOL_SAVE_TIMEOUT": "save_timeout",
    "RTOOL_MAX_NONFINITE": "max_nonfinite",
    "RTOOL_AUTO_REQUEUE": "auto_requeue",
    "RTOOL_MAX_REQUEUES": "max_requeues",
    "RTOOL_REQUEUE_EXIT_CODE": "requeue_exit_code",
    "RTOOL_SYNC_EVERY": "sync_every",
    "RTOOL_POLL_INTERVAL": "poll_interval",
    "RTOOL_HEARTBEAT_INTERVAL": "heartbeat_interval",
}
_OFF = {"", "0", "off", "no", "none", "false"}
_ON = {"1", "on", "yes", "true"}


class ShimConfigError(ValueError):
    """A shim option (keyword or RTOOL_* variable) has a bad value."""


def env_options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Guard keywords set by RTOOL_* variables (raw strings; Guard parses them)."""
    env = os.environ if environ is None else environ
    return {kw: env[var] for var, kw in ENV_OPTIONS.items() if env.get(var, "").strip() != ""}


def duration(name: str, value: str | float) -> float:
    try:
        return parse_duration(value)
    except UnitError as exc:
        raise ShimConfigError(f"rtool.shim: {name}: {exc}") from None


def flag(name: str, value: bool | str) -> bool:
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in _ON:
        return True
    if low in _OFF:
        return False
    raise ShimConfigError(f"rtool.shim: {name}: not a yes/no value: {value!r} (write 1 or 0)")


def count(name: str, value: int | str | None, minimum: int = 0) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in _OFF - {"0"}):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ShimConfigError(f"rtool.shim: {name}: not a whole number: {value!r}") from None
    if n < minimum:
        raise ShimConfigError(f"rtool.shim: {name}: must be at least {minimum}: {value!r}")
    return n


def signals(value: Iterable[str | int] | str | None) -> tuple[signal.Signals, ...]:
    """`"USR1,TERM"`, `["SIGUSR1", 15]` -> (SIGUSR1, SIGTERM); None or "" -> ()."""
    if value is None:
        return ()
    items = value.replace(" ", ",").split(",") if isinstance(value, str) else list(value)
    out: list[signal.Signals] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            continue
        out.append(_signal(item))
    return tuple(dict.fromkeys(out))


def _signal(item: str | int) -> signal.Signals:
    try:
        if isinstance(item, int) or item.strip().isdigit():
            return signal.Signals(int(item))
        name = item.strip().upper()
        return signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]
    except (KeyError, ValueError):
        raise ShimConfigError(f"rtool.shim: signals: unknown signal {item!r}") from None


def exit_before_end(value: str | float | None) -> float | str | None:
    """ "auto", seconds, or None (off)."""
    if value is None:
        return None
    if isinstance(value, str):
        low = value.strip().lower()
        if low == "auto":
            return "auto"
        if low in _OFF - {"0"}:
            return None
    return duration("exit_before_end", value)


def memory_limit(value: str | float | None) -> tuple[float | None, int | None]:
    """`"95%"` -> (95.0, None); `"200GiB"` -> (None, bytes); a bare number <= 100 is percent."""
    if value is None:
        return None, None
    try:
        if isinstance(value, str) and not value.strip().endswith("%"):
            text = value.strip()
            if text.replace(".", "", 1).isdigit() and float(text) <= 100:
                return parse_percent(text), None
            return None, parse_size(text)
        return parse_percent(value), None
    except UnitError as exc:
        raise ShimConfigError(f"rtool.shim: max_memory_used: {exc}") from None


def size(name: str, value: str | int | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_size(value)
    except UnitError as exc:
        raise ShimConfigError(f"rtool.shim: {name}: {exc}") from None


def sync_every(value: int | str) -> int | None:
    """A fixed number of steps between agreements, or None for "auto"."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    return count("sync_every", value, minimum=1)
