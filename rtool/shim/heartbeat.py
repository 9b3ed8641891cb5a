"""The shim's heartbeat file and done marker (format documented in docs/shim.md).

One JSON object, rewritten atomically (temp file + rename) by rank 0 only: once when the
Guard is created (`starting`: this run's pid, job ids and start time replace the previous
run's), while the loop makes progress (at most every `interval` seconds), on every stop and on
finish. It is NOT rewritten while the loop is stuck, so an old `time` means a hang.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from rtool.core.state import atomic_write

log = logging.getLogger("rtool.shim")

HEARTBEAT_VERSION = 1
#: Keys of the last stop, carried over from the previous run until this run stops.
STOP_KEYS = ("stop_reason", "stop_detail", "stop_step", "stop_time", "stop_job_id", "exit_code")


def done_marker(path: str | os.PathLike[str]) -> Path:
    """The done marker beside a heartbeat: `<heartbeat>.done`."""
    return Path(f"{os.fspath(path)}.done")


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically replace `path` with `data` (readers see old or new, never a mix)."""
    atomic_write(path, json.dumps(data, sort_keys=True) + "\n")


class Heartbeat:
    """Writes the heartbeat file; thread-safe; silent (logged) on I/O errors."""

    def __init__(self, path: str | os.PathLike[str], ids: dict[str, Any]) -> None:
        self.path = Path(path)
        self.enabled = True  # False on ranks other than 0
        self.frozen = False  # set once a stop or finish was written: no more progress writes
        self._lock = threading.Lock()
        self._static: dict[str, Any] = {
            "version": HEARTBEAT_VERSION,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.time(),
            **ids,
        }
        previous = read_json(self.path) or {}
        self._stop: dict[str, Any] = {k: previous.get(k) for k in STOP_KEYS}
        self.prior_save_seconds = _float(previous.get("save_seconds"))
        self.prior_step_seconds = _float(previous.get("max_step_seconds"))

    def clear_done(self) -> None:
        """A run that starts is not done: remove a stale done marker."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(done_marker(self.path))

    def starting(self, fields: dict[str, Any]) -> None:
        """The first write of a run, before its first step (so no previous run's heartbeat
        stays in place while the model loads)."""
        with self._lock:
            if self.enabled and not self.frozen:
                self._write({**fields, "state": "starting"})

    def progress(self, fields: dict[str, Any]) -> None:
        """A periodic write while running (skipped after a stop or finish)."""
        with self._lock:
            if self.enabled and not self.frozen:
                self._write({"state": "running", **fields})

    def final(self, state: str, fields: dict[str, Any], stop: dict[str, Any] | None) -> None:
        """The last write of this process: `stopped` (with `stop`) or `finished`."""
        with self._lock:
            self.frozen = True
            if stop is not None:
                self._stop = {k: stop.get(k) for k in STOP_KEYS}
            if self.enabled:
                self._write({"state": state, **fields})

    def _write(self, fields: dict[str, Any]) -> None:
        data = {**self._static, **self._stop, **fields}
        try:
            write_json(self.path, data)
        except OSError as exc:
            log.warning("rtool.shim: cannot write heartbeat %s: %s", self.path, exc)

    def mark_done(self, fields: dict[str, Any]) -> None:
        """Write `<heartbeat>.done` (rank 0 only)."""
        if not self.enabled:
            return
        try:
            write_json(done_marker(self.path), {**self._static, **fields})
        except OSError as exc:
            log.warning("rtool.shim: cannot write done marker: %s", exc)


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
