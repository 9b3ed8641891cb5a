"""The shim's side of the heartbeat (docs/shim.md, "Heartbeat file"): `Heartbeat` records, one
JSON object rewritten atomically (temp file + rename, no fsync) by rank 0 only: at the start, on
progress (at most every `interval`, from the monitor thread), a save on the way out (`saving`),
stops, finish and an uncaught exception. Never while the loop is stuck, so an old `time` means a
hang. O_NOFOLLOW | O_NONBLOCK; a write from the training thread waits at most WRITE_TIMEOUT
seconds (a stuck file system never holds the training).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtool import __version__
from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError, RunState, read_heartbeat

log = logging.getLogger("rtool.shim")

#: Seconds the training thread waits for one heartbeat write.
WRITE_TIMEOUT = 2.0
#: Fields of the last stop, carried over from the previous run until this run stops.
STOP_FIELDS = ("stop_reason", "stop_detail", "stop_step", "stop_time", "stop_job_id", "exit_code")
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def done_marker(path: str | os.PathLike[str]) -> Path:
    """The done marker beside a heartbeat: `<heartbeat>.done`."""
    return Path(f"{os.fspath(path)}.done")


def write_file(path: Path, text: str) -> None:
    """Atomically replace `path` (temp file in the same folder, never following a link)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, _CREATE, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class HeartbeatWriter:
    """Writes the heartbeat file; thread-safe; silent (logged) on I/O errors."""

    def __init__(self, path: str | os.PathLike[str], base: Heartbeat) -> None:
        self.path = Path(path)
        self.enabled = True  # False on ranks other than 0
        self.frozen = False  # set once a stop, finish or crash was written: no progress
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one write at a time, never an older over a newer
        self._made = self._written = 0  # the number of the last record made, and written
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:  # the previous run's heartbeat (missing or unreadable: logged)
            self.previous: Heartbeat | None = read_heartbeat(self.path)
        except (HeartbeatFormatError, OSError) as exc:
            log.warning("rtool.shim: previous heartbeat ignored: %s", exc)
            self.previous = None
        prev = self.previous
        carried = {k: getattr(prev, k) for k in STOP_FIELDS} if prev is not None else {}
        self.current = base.replace(**carried)

    def clear_done(self) -> None:
        """A run that starts is not done: remove a stale done marker."""
        with contextlib.suppress(OSError):
            os.unlink(done_marker(self.path))

    def progress(self, state: RunState, fields: dict[str, Any], *, bounded: bool = True) -> None:
        """A write while this process lives (skipped after a stop, finish or crash)."""
        self._record(state, fields, bounded, final=False)

    def final(self, state: RunState, fields: dict[str, Any]) -> None:
        """A last write of this process: `stopped`, `finished` or `crashed` (a later one, e.g.
        a save timeout after the stop, replaces it; progress writes end here)."""
        self._record(state, fields, True, final=True)

    def _record(self, state: RunState, fields: dict[str, Any], bounded: bool, final: bool) -> None:
        with self._lock:
            if self.frozen and not final:
                return
            self.frozen = self.frozen or final
            self.current = record = self.current.replace(state=state, **fields)
            self._made += 1
            number = self._made
        if self.enabled:
            self._write(self.path, record, bounded, number)

    def mark_done(self) -> None:
        """Write `<heartbeat>.done` (rank 0 only)."""
        if self.enabled:
            self._write(done_marker(self.path), self.current, True, None)

    def _write(self, path: Path, record: Heartbeat, bounded: bool, number: int | None) -> None:
        text = record.to_json()
        if not bounded or threading.current_thread().name == "rtool-shim":
            self._write_now(path, text, number)
            return
        t = threading.Thread(target=self._write_now, args=(path, text, number), daemon=True)
        t.start()
        t.join(WRITE_TIMEOUT)
        if t.is_alive():
            log.warning("rtool.shim: heartbeat write to %s takes > %gs: not waiting", path, 2.0)

    def _write_now(self, path: Path, text: str, number: int | None) -> None:
        """Write `text`, unless a newer record (a higher `number`) was written already: the
        monitor thread's periodic record, made before a stop, must not land after it."""
        if not self._write_lock.acquire(timeout=WRITE_TIMEOUT):  # a write stuck on the disk
            log.warning("rtool.shim: heartbeat %s: a write is stuck; this one skipped", path)
            return
        try:
            if number is not None and number < self._written:
                return
            write_file(path, text)
            if number is not None:
                self._written = number
        except OSError as exc:
            log.warning("rtool.shim: cannot write heartbeat %s: %s", path, exc)
        finally:
            self._write_lock.release()


@dataclass(frozen=True)
class JobIdentity:
    """Who is training: Slurm ids, rank, the run name (from the environment)."""

    job_id: str | None = None
    array_job_id: str | None = None
    array_task_id: str | None = None
    restart_count: int = 0
    rank: int = 0
    world_size: int = 1
    run: str | None = None
    launch: int = 0  # RTOOL_LAUNCH: the in-place restart of this attempt (0: the first launch)

    @classmethod
    def from_env(
        cls, job_id: str | None = None, environ: Mapping[str, str] | None = None
    ) -> JobIdentity:
        env = os.environ if environ is None else environ
        return cls(
            job_id=job_id or env.get("SLURM_JOB_ID") or None,
            array_job_id=env.get("SLURM_ARRAY_JOB_ID") or None,
            array_task_id=env.get("SLURM_ARRAY_TASK_ID") or None,
            restart_count=_int(env.get("SLURM_RESTART_COUNT"), 0),
            rank=_int(env.get("RANK") or env.get("SLURM_PROCID"), 0),
            world_size=_int(env.get("WORLD_SIZE") or env.get("SLURM_NTASKS"), 1),
            run=env.get("RTOOL_RUN") or env.get("SLURM_JOB_NAME") or None,
            launch=_int(env.get("RTOOL_LAUNCH"), 0),
        )

    def base_record(self) -> Heartbeat:
        """The `starting` heartbeat of this process (every field of the identity is one of the
        heartbeat's)."""
        now = time.time()
        return Heartbeat(
            state=RunState.STARTING,
            time=now,
            started=now,
            host=socket.gethostname(),
            pid=os.getpid(),
            rtool_version=__version__,
            **dataclasses.asdict(self),
        )


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default
