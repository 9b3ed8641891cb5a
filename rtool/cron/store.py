"""Where a chain keeps its state: identity (job name), state file, heartbeat, locks.

One chain per user and cron folder: its Slurm job name is `rtool-cron-<hash of user+dir>`,
its state lives in `<state dir>/cron/<hash>/`, and the heartbeat is also copied to
`<cron dir>/heartbeat.json` for people who look there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from rtool.core.errors import UsageError
from rtool.core.identity import current_user
from rtool.core.safeio import kind_of
from rtool.core.state import StateDir, atomic_write
from rtool.core.validate import ArgvError, job_id

log = logging.getLogger(__name__)
HEARTBEAT = "heartbeat.json"
CHAIN = "chain.json"
#: How many past ticks `ticks.json` keeps (slot, start, lateness: for status and the benchmark).
TICK_HISTORY = 200


def resolve_dir(path: str | Path) -> Path:
    """The cron folder as an absolute path (`~` expanded, symlinks resolved)."""
    p = Path(path).expanduser()
    try:
        return p.resolve()
    except OSError as exc:
        raise UsageError(f"cron dir {p}: {exc.strerror}") from None


def dir_problem(root: Path) -> str | None:
    """Why `root` cannot be a cron folder (`cron dir X is a FIFO, not a folder`, or the same of
    the first ancestor that exists: `--dir file/sub`), None when it is one or can be made."""
    for p in (root, *root.parents):
        if os.path.lexists(p):
            if os.path.isdir(p):
                return None
            where = "" if p == root else f": {p} is {kind_of(p)}"
            return f"cron dir {root}{where or f' is {kind_of(p)}'}, not a folder"
    return None


def chain_key(root: Path, user: str | None = None) -> str:
    who = user or current_user()
    return hashlib.sha256(f"{who}\0{root}".encode()).hexdigest()[:10]


def chain_name(root: Path, user: str | None = None) -> str:
    """The Slurm job name of the scheduler chain for this user and folder."""
    return f"rtool-cron-{chain_key(root, user)}"


class CronStore:
    """The state of one chain (under the state dir) and its heartbeat."""

    def __init__(self, state: StateDir, root: Path) -> None:
        self.state = state
        self.root = root
        self.key = chain_key(root)
        self.name = chain_name(root)
        self.rel = f"cron/{self.key}"

    # -- state.json: last slots, cron.d last checks, job results, tracked Slurm jobs --------------
    def load(self) -> dict[str, Any]:
        data = self.state.read_json(f"{self.rel}/state.json", default=None)
        if not isinstance(data, dict):
            data = {}
        data.setdefault("dir", str(self.root))
        for key in ("last_slots", "lines", "jobs", "slurm_jobs"):
            if not isinstance(data.get(key), dict):
                data[key] = {}
        data["slurm_jobs"] = _tracked_jobs(data["slurm_jobs"])
        return data

    def save(self, data: dict[str, Any]) -> None:
        self.state.write_json(f"{self.rel}/state.json", data)

    # -- heartbeat ---------------------------------------------------------------------------
    def read_heartbeat(self) -> dict[str, Any] | None:
        data = self.state.read_json(f"{self.rel}/{HEARTBEAT}", default=None)
        return data if isinstance(data, dict) else None

    def write_heartbeat(self, beat: dict[str, Any]) -> None:
        self.state.write_json(f"{self.rel}/{HEARTBEAT}", beat)
        # the copy in the cron dir is a convenience; the state dir one is authoritative
        with contextlib.suppress(OSError):
            text = json.dumps(beat, indent=1, sort_keys=True, default=str)
            atomic_write(self.root / HEARTBEAT, text, mode=0o644)

    def read_ticks(self) -> list[dict[str, Any]]:
        data = self.state.read_json(f"{self.rel}/ticks.json", default=None)
        return [t for t in data if isinstance(t, dict)] if isinstance(data, list) else []

    def append_tick(self, entry: dict[str, Any]) -> None:
        ticks = [*self.read_ticks(), entry][-TICK_HISTORY:]
        self.state.write_json(f"{self.rel}/ticks.json", ticks)

    # -- chain.json: how the chain was started and whether it was stopped on purpose -----------
    def read_chain(self) -> dict[str, Any]:
        """{"backend", "started", "periods", "stopped", "stopped_by", "stopped_how"} ({} when
        this rtool never started the chain). Written only by start/stop/install/uninstall
        (never by a tick, which could otherwise write over a stop)."""
        data = self.state.read_json(f"{self.rel}/{CHAIN}", default=None)
        return data if isinstance(data, dict) else {}

    def mark_started(
        self, backend: str, periods: dict[str, float], now: float, first: float
    ) -> None:
        """Started (`first`: the slot of its first tick); any stop mark is gone."""
        info = {"dir": str(self.root), "backend": backend, "started": now, "periods": periods}
        info["first_tick"] = first
        self.state.write_json(f"{self.rel}/{CHAIN}", info)

    def mark_stopped(self, how: str, now: float) -> None:
        """Stopped on purpose (`rtool watch cron` says so instead of calling it dead)."""
        info = {**self.read_chain(), "dir": str(self.root), "stopped": now}
        info.update(stopped_by=current_user(), stopped_how=how)
        self.state.write_json(f"{self.rel}/{CHAIN}", info)

    # -- locks -------------------------------------------------------------------------------
    def chain_lock(self) -> AbstractContextManager[bool]:
        """Held while checking for and queueing a chain job (start and each tick)."""
        return self.state.lock(f"cron-{self.key}-chain")

    def run_lock(self) -> AbstractContextManager[bool]:
        """Held while running jobs (a tick or `cron run`); never waited for."""
        return self.state.lock(f"cron-{self.key}-run", blocking=False)


def _tracked_jobs(tracked: dict[str, Any]) -> dict[str, Any]:
    """The submitted jobs a tick follows; an entry whose key is not a job id (a corrupt or
    forged state file) is dropped with a warning, so it never reaches sacct's or scontrol's argv.
    """
    kept: dict[str, Any] = {}
    for key, info in tracked.items():
        try:
            job_id(key)
        except ArgvError as exc:
            log.warning("cron state: dropping a tracked job: %s", exc)
            continue
        if isinstance(info, dict):
            start = info.get("start")
            ok = isinstance(start, (int, float)) and not isinstance(start, bool)
            kept[key] = info if ok else {**info, "start": 0.0}
    return kept
