"""`rtool cron list`: every cron chain of yours, from the state dir and one squeue call.

A chain is known by its state (`<state dir>/cron/<key>/`: chain.json, heartbeat, last slots)
and by its Slurm jobs (named `rtool-cron-<key>`). Its state is `running` (a tick runs now),
`queued` (the next tick waits for its slot), `stopped` (stopped on purpose: `rtool cron
stop`), `dead` (nothing queued and never stopped: `rtool watch cron` is CRITICAL) or `unknown`
(squeue failed). Formatting is pure.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rtool.core.slurm import ACTIVE_STATES, Slurm, SlurmError, SqueueJob
from rtool.core.state import StateDir
from rtool.core.units import format_duration, format_when
from rtool.cron.store import CronStore

PREFIX = "rtool-cron-"


@dataclass
class Slot:
    name: str  # tick, hourly, daily, weekly
    every: float | None  # seconds (None: not recorded by an older rtool)
    last: float | None  # the last slot run (None: not yet)


@dataclass
class Chain:
    dir: str | None  # None: its jobs are queued, but its state is in another state dir
    name: str
    backend: str  # jobs | scrontab | - (not recorded)
    state: str  # running | queued | stopped | dead | unknown
    jobs: list[str] = field(default_factory=list)  # "123 PENDING"
    last_tick: float | None = None
    next_tick: float | None = None
    stopped: float | None = None
    stopped_by: str | None = None
    slots: list[Slot] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def chains(state: StateDir, slurm: Slurm) -> tuple[list[Chain], str | None]:
    """Every chain this state dir knows, and every queued chain job of yours; (chains, the
    squeue error or None)."""
    jobs: list[SqueueJob] | None = None
    error = None
    try:
        jobs = [j for j in slurm.squeue() if j.name.startswith(PREFIX)]  # yours only
    except SlurmError as exc:
        error = str(exc)
    out = [c for f in _folders(state) if (c := _known(state, f.name, jobs)) is not None]
    known = {c.name for c in out}
    for name in sorted({j.name for j in jobs or []} - known):
        mine = [j for j in jobs or [] if j.name == name and j.state in ACTIVE_STATES]
        if mine:
            out.append(Chain(None, name, "-", _state(mine, {}), _listed(mine)))
    return out, error


def _folders(state: StateDir) -> list[Path]:
    base = state.path / "cron"
    try:
        return sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _known(state: StateDir, key: str, jobs: list[SqueueJob] | None) -> Chain | None:
    data = state.read_json(f"cron/{key}/state.json", default={})
    info = state.read_json(f"cron/{key}/chain.json", default={})
    folder = info.get("dir") or data.get("dir")
    if not isinstance(folder, str):
        return None
    store = CronStore(state, Path(folder))
    if store.key != key:  # another user's hash, or a moved folder: not this chain
        return None
    beat = store.read_heartbeat() or {}
    mine = None if jobs is None else [j for j in jobs if j.name == store.name]
    active = None if mine is None else [j for j in mine if j.state in ACTIVE_STATES]
    periods = info.get("periods") if isinstance(info.get("periods"), dict) else {}
    last_slots = data.get("last_slots") if isinstance(data.get("last_slots"), dict) else {}
    names = [n for n in ("tick", "hourly", "daily", "weekly") if n in periods or n in last_slots]
    return Chain(
        dir=folder,
        name=store.name,
        backend=str(info.get("backend") or "-"),
        state="unknown" if active is None else _state(active, info),
        jobs=_listed(active or []),
        last_tick=_number(beat.get("time")),
        next_tick=_latest(beat.get("next_slot"), info.get("first_tick")),
        stopped=_number(info.get("stopped")),
        stopped_by=info.get("stopped_by") if isinstance(info.get("stopped_by"), str) else None,
        slots=[Slot(n, _number(periods.get(n)), _number(last_slots.get(n))) for n in names],
    )


def _state(active: list[SqueueJob], info: dict[str, Any]) -> str:
    if any(j.state == "RUNNING" for j in active):
        return "running"
    if active:
        return "queued"
    return "stopped" if _number(info.get("stopped")) is not None else "dead"


def _listed(jobs: list[SqueueJob]) -> list[str]:
    return [f"{j.job_id} {j.state}" for j in jobs]


def _latest(*values: Any) -> float | None:
    return max((v for v in map(_number, values) if v is not None), default=None)


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok else None


def render(found: list[Chain], error: str | None, now: float | None = None) -> list[str]:
    """The table of `rtool cron list` (pure)."""
    now = time.time() if now is None else now
    if not found:
        lines = ["no cron chains (start one: rtool cron init DIR && rtool cron start --dir DIR)"]
        return lines + ([f"(squeue failed: {error})"] if error else [])
    lines = [f"{'STATE':<8} {'BACKEND':<8} {'LAST TICK':<32} {'NEXT TICK':<32} FOLDER"]
    for c in found:
        last = format_when(c.last_tick, now, missing="never")
        nxt = "-" if c.state in ("stopped", "dead") else format_when(c.next_tick, now, "-")
        folder = c.dir or f"? ({c.name}: its state is in another state dir)"
        lines.append(f"{c.state:<8} {c.backend:<8} {last:<32} {nxt:<32} {folder}")
        lines.append(f"{'':<8} slots: {_slots(c.slots, now)}")
        if c.state == "stopped" and c.stopped is not None:
            by = f" by {c.stopped_by}" if c.stopped_by else ""
            lines.append(f"{'':<8} stopped {format_when(c.stopped, now)}{by}")
        if c.jobs:
            lines.append(f"{'':<8} jobs: {', '.join(c.jobs)} ({c.name})")
    if error:
        lines.append(f"squeue failed ({error}): states unknown")
    return lines


def _slots(slots: list[Slot], now: float) -> str:
    if not slots:
        return "-"
    parts = []
    for s in slots:
        every = format_duration(s.every) if s.every is not None else "?"
        last = "" if s.last is None else f", last {format_when(s.last, now)}"
        parts.append(f"{s.name} every {every}" + ("" if s.name == "tick" else last))
    return "; ".join(parts)
