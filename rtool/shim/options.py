"""The shim's settings: one typed `GuardOptions`, from keywords and RTOOL_* variables.

Stdlib + rtool.core.units only. Every bad value raises ShimConfigError (one line naming the
option): also a signal that cannot be caught (KILL, STOP), a requeue exit code outside 0-255.
A heartbeat path taken on disk by a folder or a FIFO is no setting: one warning, no heartbeat.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rtool.core.units import UnitError, parse_duration, parse_percent, parse_size

log = logging.getLogger("rtool.shim")

_ENV_KEYWORDS = (
    "kill_switch save_switch heartbeat exit_before_end signals max_memory_used min_gpu_free "
    "save_timeout max_nonfinite auto_requeue max_requeues requeue_exit_code sync_every "
    "poll_interval heartbeat_interval deadline_signals deadline_window end_time_refresh "
    "unresponsive_after hang_after abort_file save_every"
)
#: RTOOL_<KEYWORD> variable -> Guard keyword (values parsed by Guard like keyword values).
ENV_OPTIONS = {f"RTOOL_{kw.upper()}": kw for kw in _ENV_KEYWORDS.split()}
_UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}


@dataclass(frozen=True)
class GuardOptions:
    """Every setting of a Guard, parsed (docs/shim.md). Build with `GuardOptions.parse(**kw)`
    (strings like "5m", "95%", "USR1,TERM" accepted) or `GuardOptions.from_env()`."""

    kill_switch: str | None = None
    save_switch: str | None = None
    heartbeat: str | None = None
    signals: tuple[signal.Signals, ...] = (signal.SIGUSR1, signal.SIGTERM)
    #: signals that announce the job's end: stop at EndTime - margin, not when they land
    deadline_signals: tuple[signal.Signals, ...] = (signal.SIGUSR1,)
    deadline_window: float = 900.0  # a deadline signal with more time left stops at once
    unresponsive_after: float | Literal["auto"] | None = "auto"  # kill after TERM, no safe point
    #: no step (nor `alive()`) for this long: dump the stacks, end the process (89); off: None
    hang_after: float | Literal["auto"] | None = None
    #: the file through which the ranks of one launch tell each other one of them failed
    abort_file: str | None = None
    #: save this often (`auto`: as often as keeps saves at SAVE_OVERHEAD of the time); off: None
    save_every: float | Literal["auto"] | None = None
    exit_before_end: float | Literal["auto"] | None = None
    end_time: float | None = None
    end_time_refresh: float = 300.0  # re-read the job's EndTime this often (TimeLimit updates)
    max_memory_percent: float | None = None
    max_memory_bytes: int | None = None
    min_gpu_free: int | None = None
    save_timeout: float = 300.0
    max_nonfinite: int = 10
    auto_requeue: bool = False
    max_requeues: int | None = None
    requeue_exit_code: int = 85
    sync_every: int | None = None  # None: "auto"
    sync_seconds: float = 2.0
    poll_interval: float = 1.0
    heartbeat_interval: float = 5.0
    safety_factor: float = 2.0
    min_margin: float = 60.0
    exit: bool = True
    distributed: bool | None = None
    job_id: str | None = None

    @classmethod
    def parse(cls, **raw: Any) -> GuardOptions:
        """Keyword values (typed or strings) -> options; unknown keywords are an error."""
        names = {f.name for f in dataclasses.fields(cls)} | {"max_memory_used"}
        unknown = sorted(set(raw) - names)
        if unknown:
            raise ShimConfigError(f"rtool.shim: unknown option {unknown[0]!r}")
        out: dict[str, Any] = {}
        for name, value in raw.items():
            if name == "max_memory_used":
                out["max_memory_percent"], out["max_memory_bytes"] = memory_limit(value)
            else:
                out[name] = _PARSERS.get(name, lambda n, v: v)(name, value)
        opts = cls(**out)
        problem = heartbeat_problem(opts.heartbeat)
        if problem is not None:  # left on disk, not a setting: never end the training for it
            log.warning("rtool.shim: heartbeat: %s; training on without a heartbeat", problem)
            opts = dataclasses.replace(opts, heartbeat=None)
        return opts

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> GuardOptions:
        """RTOOL_* variables (raw strings, parsed as keywords are), then keyword overrides."""
        env = os.environ if environ is None else environ
        found = {kw: env[var] for var, kw in ENV_OPTIONS.items() if env.get(var, "").strip() != ""}
        return cls.parse(**{**found, **overrides})


_OFF = {"", "0", "off", "no", "none", "false"}
_ON = {"1", "on", "yes", "true"}


class ShimConfigError(ValueError):
    """A shim option (keyword or RTOOL_* variable) has a bad value."""


def _units(name: str, parse: Callable[[Any], Any], value: Any) -> Any:
    try:
        return parse(value)
    except UnitError as exc:
        raise ShimConfigError(f"rtool.shim: {name}: {exc}") from None


def duration(name: str, value: str | float) -> float:
    return float(_units(name, parse_duration, value))


def flag(name: str, value: bool | str) -> bool:
    if isinstance(value, bool):
        return value
    low = str(value).strip().lower()
    if low in _ON:
        return True
    if low in _OFF:
        return False
    raise ShimConfigError(f"rtool.shim: {name}: not a yes/no value: {value!r} (write 1 or 0)")


def _off(value: Any) -> bool:
    """None, or a word for off ("off", "none", ...; "0" is a value)."""
    return value is None or (isinstance(value, str) and value.strip().lower() in _OFF - {"0"})


def count(name: str, value: int | str | None, minimum: int = 0) -> int | None:
    if value is None or _off(value):
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
    out = [_signal(i) for i in items if not (isinstance(i, str) and not i.strip())]
    return tuple(dict.fromkeys(out))


def _signal(item: str | int) -> signal.Signals:
    try:
        if isinstance(item, int) or item.strip().isdigit():
            sig = signal.Signals(int(item))
        else:
            name = item.strip().upper()
            sig = signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]
    except (KeyError, ValueError):
        raise ShimConfigError(f"rtool.shim: signals: unknown signal {item!r}") from None
    if sig in _UNCATCHABLE:
        raise ShimConfigError(f"rtool.shim: signals: {sig.name} cannot be caught")
    return sig


def heartbeat_problem(path: str | None) -> str | None:
    """Why a heartbeat path cannot be written: a folder, a FIFO or another non-file is in its
    place (never opened); None when it can (missing: made on the first write)."""
    if not path:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None  # missing (created on the first write) or unreadable (logged when written)
    if stat.S_ISDIR(st.st_mode):
        return f"{path} is a folder"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        return f"{path} is not a regular file"
    return None


def _path(name: str, value: Any) -> str | None:
    return os.fspath(value) if value else None


def _auto_duration(name: str, value: Any) -> float | str | None:
    """ "auto", seconds, or None (off)."""
    if _auto(value):
        return "auto"
    return None if _off(value) else duration(name, value)


def _positive(name: str, value: float | str | None) -> float | str | None:
    if isinstance(value, float) and value <= 0:
        raise ShimConfigError(f"rtool.shim: {name}: must be more than 0 (or off): {value:g}")
    return value


def _exit_code(name: str, value: Any) -> int:
    n = count(name, value)
    if n is None or n > 255:
        raise ShimConfigError(f"rtool.shim: {name}: must be an exit code 0-255: {value!r}")
    return n


def memory_limit(value: str | float | None) -> tuple[float | None, int | None]:
    """`"95%"` -> (95.0, None); `"200GiB"` -> (None, bytes); a bare number <= 100 is percent."""
    if value is None:
        return None, None
    text = value.strip() if isinstance(value, str) else value
    if (
        isinstance(text, str)
        and not text.endswith("%")
        and not (text.replace(".", "", 1).isdigit() and float(text) <= 100)
    ):
        return None, _units("max_memory_used", parse_size, text)
    return _units("max_memory_used", parse_percent, text), None


def _auto(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


_PARSERS: dict[str, Any] = {
    "kill_switch": _path,
    "save_switch": _path,
    "heartbeat": _path,
    "signals": lambda n, v: signals(v),
    "deadline_signals": lambda n, v: signals(v) if str(v).strip().lower() not in _OFF else (),
    "deadline_window": duration,
    "unresponsive_after": _auto_duration,
    "hang_after": lambda n, v: _positive(n, _auto_duration(n, v)),
    "abort_file": _path,
    "save_every": lambda n, v: _positive(n, _auto_duration(n, v)),
    "exit_before_end": _auto_duration,
    "end_time": lambda n, v: None if v is None else float(v),
    "end_time_refresh": duration,
    "min_gpu_free": lambda n, v: None if v is None else _units(n, parse_size, v),
    "save_timeout": duration,
    "max_nonfinite": lambda n, v: count(n, v, minimum=1) or 10,
    "auto_requeue": flag,
    "max_requeues": count,
    "requeue_exit_code": _exit_code,
    "sync_every": lambda n, v: None if _auto(v) else count(n, v, minimum=1),  # None: auto
    "sync_seconds": duration,
    "poll_interval": duration,
    "heartbeat_interval": duration,
    "safety_factor": lambda n, v: float(v),
    "min_margin": duration,
    "exit": flag,
    "distributed": lambda n, v: None if v is None else flag(n, v),
    "job_id": lambda n, v: str(v) if v else None,
}
