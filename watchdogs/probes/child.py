"""Run filesystem probes in abandonable child processes, and remember the ones that hang.

Why not a thread or `rtool.core.proc.run`: a statfs on a FUSE or network mount whose server never
answers blocks uninterruptibly; a thread stuck there keeps the Python process from exiting, and
a child sharing our stdout keeps `rtool ... | tee` open. So each probe is `statfs_child.py`
in its own session, stdin from /dev/null and stdout/stderr on pipes we read. On timeout it is
sent SIGKILL (which frees it unless it is stuck in the kernel), our pipe ends are closed and it
is abandoned. Its pid is stored in the state dir under the mount it probed; while that pid
still lives, the mount is reported as stuck without starting another probe.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtool.core.state import StateDir

CHILD = str(Path(__file__).with_name("statfs_child.py"))
STUCK_FILE = "watch/stuck-probes.json"


@dataclass
class Outcome:
    """What a child probe gave: `data` (its JSON), or `error`, or `timed_out`."""

    data: dict[str, Any] | None = None
    error: str | None = None
    timed_out: bool = False
    pid: int | None = None


def start(mode: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", CHILD, mode, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )


def collect(proc: subprocess.Popen[bytes], deadline: float) -> Outcome:
    """Wait for `proc` until `deadline` (time.monotonic); abandon it after that."""
    remaining = deadline - time.monotonic()
    try:
        if proc.poll() is not None:  # finished while we waited for another probe
            out, err = proc.communicate()
        else:
            out, err = proc.communicate(timeout=max(0.05, remaining))
    except subprocess.TimeoutExpired:
        abandon(proc)
        return Outcome(timed_out=True, pid=proc.pid)
    if proc.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return Outcome(error=f"probe exited {proc.returncode}: {last[0]}", pid=proc.pid)
    try:
        data = json.loads(out)
    except ValueError:
        return Outcome(error="probe printed no JSON", pid=proc.pid)
    if not data.get("ok"):
        return Outcome(error=str(data.get("error", "probe failed")), pid=proc.pid)
    return Outcome(data=data, pid=proc.pid)


def abandon(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's session, close our pipe ends, do not wait for it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(proc.pid, os.WNOHANG)


def proc_start_time(pid: int) -> int | None:
    """The kernel start time of `pid` (guards against pid reuse), or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()
    if not fields or fields[0] in ("Z", "X"):
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it was ours
        return None
    return int(fields[19])


class StuckProbes:
    """The state file of abandoned probes: {mount: {pid, start, since}}."""

    def __init__(self, state: StateDir) -> None:
        self.state = state

    def _load(self) -> dict[str, dict[str, Any]]:
        data = self.state.read_json(STUCK_FILE, {})
        return data if isinstance(data, dict) else {}

    def still_stuck(self, mount: str) -> dict[str, Any] | None:
        """The entry for `mount` when its probe is still hanging; forgets finished ones."""
        with self.state.lock("stuck-probes"):
            data = self._load()
            entry = data.get(mount)
            if entry is None:
                return None
            start_time = proc_start_time(int(entry.get("pid", 0)))
            if start_time is not None and start_time == entry.get("start"):
                return dict(entry)
            del data[mount]
            self.state.write_json(STUCK_FILE, data)
            return None

    def remember(self, mount: str, pid: int, now: float) -> None:
        start_time = proc_start_time(pid)
        if start_time is None:
            return  # it died after all
        with self.state.lock("stuck-probes"):
            data = self._load()
            data[mount] = {"pid": pid, "start": start_time, "since": now}
            self.state.write_json(STUCK_FILE, data)


def _unescape(field: str) -> str:
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def mount_points(mountinfo: str) -> list[str]:
    """Mount points listed in /proc/self/mountinfo text."""
    points = []
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) > 4:
            points.append(_unescape(parts[4]))
    return points


def mount_of(path: str, points: list[str]) -> str:
    """The mount point holding `path`, by string prefix only (never touches the path)."""
    absolute = os.path.normpath(os.path.join(os.getcwd(), os.path.expanduser(path)))
    best = "/"
    for point in points:
        inside = absolute == point or absolute.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best = point
    return best


def read_mount_points() -> list[str]:
    try:
        return mount_points(Path("/proc/self/mountinfo").read_text())
    except OSError:
        return []
