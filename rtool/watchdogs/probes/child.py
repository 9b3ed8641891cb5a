"""Run filesystem probes in abandonable child processes, and remember the ones that hang.

Why not a thread or `rtool.core.proc.run`: a statfs on a FUSE or network mount whose server never
answers blocks uninterruptibly; a thread stuck there keeps the Python process from exiting, and
a child sharing our stdout keeps `rtool ... | tee` open. So probes run in `statfs_child.py`,
in its own session, stdin from /dev/null and stdout/stderr on pipes we read. `statvfs_all`
probes every path from ONE child, one thread per path there, and reads each answer as it
comes, so a hung mount delays no other mount's answer. When a path is still unanswered at its
deadline the child is sent SIGKILL (which frees it unless a thread is stuck in the kernel), our
pipe ends are closed and it is abandoned whole. The stuck thread (pid, thread id and start
time) is stored in the state dir under the mount it probed; while that thread still lives the
mount is reported as stuck without starting another probe (like node_exporter).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtool.core import ckptscan
from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError
from rtool.core.state import StateDir

CHILD = str(Path(__file__).with_name("statfs_child.py"))
#: The checkpoint watchdog's child (scan a checkpoint folder, prune old checkpoints).
CKPT_CHILD = str(Path(ckptscan.__file__))
STUCK_FILE = "watch/stuck-probes.json"


@dataclass
class Outcome:
    """What a child probe gave: `data` (its JSON), or `error`, or `timed_out`."""

    data: dict[str, Any] | None = None
    error: str | None = None
    timed_out: bool = False
    pid: int | None = None
    tid: int | None = None  # statvfs_all: the child's thread that probed this path
    answered: float | None = None  # statvfs_all: when its answer came (time.monotonic)
    real: str | None = None  # the probed path resolved (symlinks followed), when it said so
    dev: str | None = None  # st_dev ("major:minor") of the resolved path, when it said so


def start(mode: str, *args: str, script: str = CHILD) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", script, mode, *args],
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
    except subprocess.TimeoutExpired as exc:
        abandon(proc)
        said = _where(exc.output or b"")
        return Outcome(timed_out=True, pid=proc.pid, real=said[0], dev=said[1])
    if proc.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return Outcome(error=f"probe exited {proc.returncode}: {last[0]}", pid=proc.pid)
    try:
        data = json.loads(out.rstrip().rsplit(b"\n", 1)[-1])
    except ValueError:
        return Outcome(error="probe printed no JSON", pid=proc.pid)
    if not isinstance(data, dict) or not data.get("ok"):
        return Outcome(error=str(data.get("error", "probe failed")), pid=proc.pid)
    return Outcome(data=data, pid=proc.pid)


def _where(out: bytes) -> tuple[str | None, str | None]:
    """(resolved path, its st_dev) from the line a child prints before it touches the folder's
    filesystem (ckptscan.py scan), else (None, None)."""
    try:
        said = json.loads(out.split(b"\n", 1)[0])
    except ValueError:
        return None, None
    if not isinstance(said, dict) or not isinstance(said.get("dev"), str):
        return None, None
    real = said.get("real")
    return (real if isinstance(real, str) else None), said["dev"]


def statvfs_all(paths: list[str], deadlines: list[float]) -> list[Outcome]:
    """statvfs of every path from one child process, path i answered by its deadline
    (time.monotonic) or timed out; the child is abandoned whole when any path timed out."""
    if not paths:
        return []
    proc = start("statvfs", *paths)
    out = [Outcome(pid=proc.pid) for _ in paths]
    pending = set(range(len(paths)))
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while pending:
            now = time.monotonic()
            for i in [i for i in pending if deadlines[i] <= now]:
                out[i].timed_out = True
                pending.discard(i)
            if not pending:
                break
            if not sel.select(min(deadlines[i] for i in pending) - now):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            *lines, buf = (buf + chunk).split(b"\n")
            for line in lines:
                _answer(line, out, pending)
    if any(o.timed_out for o in out):
        abandon(proc)
        return out
    _finish(proc, out, pending)
    return out


def _answer(line: bytes, out: list[Outcome], pending: set[int]) -> None:
    try:
        msg = json.loads(line)
        i = int(msg["i"])
    except (ValueError, KeyError, TypeError):
        return
    if i not in pending:
        return
    if "tid" in msg:
        out[i].tid = int(msg["tid"])
        return
    if "dev" in msg:
        out[i].real, out[i].dev = str(msg.get("real")), str(msg["dev"])
        return
    if msg.get("ok"):
        out[i].data = msg
    else:
        out[i].error = str(msg.get("error", "probe failed"))
    out[i].answered = time.monotonic()
    pending.discard(i)


def _finish(proc: subprocess.Popen[bytes], out: list[Outcome], pending: set[int]) -> None:
    """Reap a child that answered every path (or exited early: those paths get its error)."""
    try:
        _, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        abandon(proc)
        err = b""
    if pending:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        for i in pending:
            out[i].error = f"probe exited {proc.returncode}: {last[0]}"


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


def proc_start_time(pid: int, tid: int | None = None) -> int | None:
    """The kernel start time of process `pid` (or of its thread `tid`), which guards against
    pid reuse; None when it is gone or a zombie."""
    where = f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat"
    try:
        raw = Path(where).read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()
    if not fields or fields[0] in ("Z", "X"):
        if tid is None:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)  # reap it if it was ours
        return None
    return int(fields[19])


class StuckProbes:
    """The state file of abandoned probes: {mount: {pid, tid, start, since}} (`tid`: the
    child's thread stuck on that mount; `start`: its kernel start time)."""

    def __init__(self, state: StateDir) -> None:
        self.state = state

    def _load(self) -> dict[str, dict[str, Any]]:
        data = self.state.read_json(STUCK_FILE, {})
        return data if isinstance(data, dict) else {}

    def still_stuck(self, mounts: list[str]) -> dict[str, dict[str, Any]]:
        """The entries of those `mounts` whose probe still hangs; forgets finished ones."""
        data = self._load()
        if not data or not any(m in data for m in mounts):
            return {}
        out: dict[str, dict[str, Any]] = {}
        with self.state.lock("stuck-probes"):
            data = self._load()
            gone = []
            for mount in set(mounts) & data.keys():
                entry = data[mount]
                tid = entry.get("tid")
                started = proc_start_time(int(entry.get("pid", 0)), int(tid) if tid else None)
                if started is not None and started == entry.get("start"):
                    out[mount] = dict(entry)
                else:
                    gone.append(mount)
            if gone:
                self.state.write_json(STUCK_FILE, {k: v for k, v in data.items() if k not in gone})
        return out

    def remember(
        self, stuck: dict[str, Outcome], now: float, where: dict[str, tuple[str, str]] | None = None
    ) -> None:
        """Remember each mount's timed-out probe (its pid and thread) while it still lives;
        `where`: {key: (the path probed, its mount point)} for `key_of` on the next sweeps."""
        entries: dict[str, dict[str, Any]] = {}
        for mount, o in stuck.items():
            start_time = proc_start_time(o.pid, o.tid) if o.pid else None
            if start_time is not None:  # else it died after all
                entries[mount] = {"pid": o.pid, "tid": o.tid, "start": start_time, "since": now}
                if where and mount in where:
                    entries[mount].update(path=where[mount][0], mount=where[mount][1])
        if not entries:
            return
        with self.state.lock("stuck-probes"):
            data = self._load()
            data.update(entries)
            self.state.write_json(STUCK_FILE, data)

    def key_of(self, path: str, mounts: dict[str, str]) -> tuple[str, str]:
        """(key, mount point) of `path` before it is probed, without touching it: the real
        mount an earlier probe of this very path hung on, else its device by mount table."""
        for key, entry in self._load().items():
            if isinstance(entry, dict) and entry.get("path") == path and key.startswith("dev "):
                return key, str(entry.get("mount") or "?")
        point = mount_of(path, list(mounts))
        return dev_key(mounts.get(point), point), point


def dev_key(dev: str | None, point: str) -> str:
    """The stuck-probe key of a mount: its device ("dev 0:53"), else its mount point."""
    return f"dev {dev}" if dev else point


def hung_where(out: Outcome, key: str, point: str, mounts: dict[str, str]) -> tuple[str, str]:
    """(key, mount point) of a probe that hung: by the st_dev of the resolved path it printed
    (a folder reached through a symlink hangs on the mount it leads to), else as before."""
    if out.dev is None:
        return key, point
    real_point = mount_of(out.real, list(mounts)) if out.real else point
    return dev_key(out.dev, real_point), real_point


def _unescape(field: str) -> str:
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def mount_devs(mountinfo: str) -> dict[str, str]:
    """{mount point: its device "major:minor"} from /proc/self/mountinfo text."""
    devs = {}
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) > 4:
            devs[_unescape(parts[4])] = parts[2]
    return devs


def mount_points(mountinfo: str) -> list[str]:
    """Mount points listed in /proc/self/mountinfo text."""
    return list(mount_devs(mountinfo))


def mount_of(path: str, points: list[str]) -> str:
    """The mount point holding `path`, by string prefix only (never touches the path)."""
    absolute = os.path.normpath(os.path.join(os.getcwd(), os.path.expanduser(path)))
    best = "/"
    for point in points:
        inside = absolute == point or absolute.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best = point
    return best


def read_mounts() -> dict[str, str]:
    try:
        return mount_devs(Path("/proc/self/mountinfo").read_text())
    except OSError:
        return {}


def read_mount_points() -> list[str]:
    return list(read_mounts())


def parse_heartbeat(raw: Any) -> tuple[Heartbeat | None, str | None]:
    """The heartbeat a probe child read (a decoded JSON object), or why it is not one."""
    if raw is None:
        return None, None
    if isinstance(raw, dict) and raw.get("_invalid"):
        return None, f"heartbeat: {raw.get('why') or 'not JSON'}"
    try:
        return Heartbeat.from_dict(raw), None
    except HeartbeatFormatError as exc:
        return None, str(exc)
