"""The memory a process may use: its job's cgroup limit where there is one, else the host's.

Slurm's task/cgroup plugin limits a job's memory (`--mem`) with a cgroup: past it the kernel's
OOM killer kills the job long before the host runs out. Read from the folder with the tightest
limit among the process's cgroup and its ancestors (v2 `memory.max`, v1 `memory.limit_in_bytes`);
usage is the working set (usage minus inactive file cache, which the kernel reclaims first), as
the OOM killer sees it. A limit at or above the host's RAM is no limit. Standard library only
(the shim uses it); every read is bounded and a missing or unreadable file means "no cgroup".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: v1 prints this (or more) for "no limit".
_V1_UNLIMITED = 1 << 60
_READ_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Mount:
    """A cgroup hierarchy mounted here: v2, or v1 with the memory controller."""

    version: int
    point: str  # where it is mounted
    root: str  # the hierarchy path shown at the mount point ("/" normally)


@dataclass(frozen=True)
class CgroupMemory:
    """The memory of one cgroup folder (the one whose limit binds the process)."""

    folder: str
    version: int
    limit: int | None  # bytes; None: no limit below the host's RAM
    usage: int  # bytes: the working set (usage minus inactive file cache)
    oom_kills: int | None  # OOM kills counted so far (None: the kernel does not say)

    @property
    def percent(self) -> float | None:
        return self.usage / self.limit * 100.0 if self.limit else None

    @property
    def where(self) -> str:
        """`memory.max` or `memory.limit_in_bytes`, for messages."""
        return "memory.max" if self.version == 2 else "memory.limit_in_bytes"


def _read(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, _READ_LIMIT).decode(errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_mountinfo(text: str) -> list[Mount]:
    """The cgroup2 mounts and the cgroup v1 mounts with the memory controller (pure)."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if not sep or len(a) < 5 or len(b) < 3:
            continue
        fstype, options = b[0], b[2].split(",")
        if fstype == "cgroup2":
            out.append(Mount(2, a[4], a[3]))
        elif fstype == "cgroup" and "memory" in options:
            out.append(Mount(1, a[4], a[3]))
    return out


def parse_proc_cgroup(text: str) -> dict[int, str]:
    """{2: the unified hierarchy path, 1: the v1 memory controller's path} (pure)."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ident, controllers, path = parts
        if ident == "0" and controllers == "":
            out[2] = path
        elif "memory" in controllers.split(","):
            out[1] = path
    return out


def parse_keyed(text: str) -> dict[str, int]:
    """`key value` lines (memory.stat, memory.events, memory.oom_control) (pure)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value.strip())
    return out


def parse_limit(text: str | None, host: int | None) -> int | None:
    """A limit file's value: bytes, or None for none (`max`, v1's huge number, >= the host's)."""
    raw = (text or "").strip()
    if not raw.isdigit():
        return None
    value = int(raw)
    if value >= _V1_UNLIMITED or (host is not None and value >= host):
        return None
    return value


def folders(pid: int | str = "self", proc: str = "/proc") -> list[tuple[Mount, str]]:
    """(mount, folder) of the process's memory cgroup in each hierarchy that has one."""
    mountinfo = _read(f"{proc}/{pid}/mountinfo") or _read(f"{proc}/self/mountinfo") or ""
    paths = parse_proc_cgroup(_read(f"{proc}/{pid}/cgroup") or "")
    out = []
    for mount in parse_mountinfo(mountinfo):
        path = paths.get(mount.version)
        if path is None:
            continue
        rel, top = path, mount.root
        if top not in ("", "/") and (path == top or path.startswith(top + "/")):
            rel = path[len(top) :]
        out.append((mount, os.path.join(mount.point, rel.lstrip("/"))))
    return out


def read_folder(folder: str, version: int, host: int | None) -> CgroupMemory | None:
    """The memory of one cgroup folder, or None when it has no memory files."""
    names: tuple[str, ...] = ("memory.max", "memory.current", "memory.events", "inactive_file")
    if version == 1:
        names = ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.oom_control")
        names += ("total_inactive_file",)
    usage_text = _read(os.path.join(folder, names[1]))
    if usage_text is None or not usage_text.strip().isdigit():
        return None
    stat = parse_keyed(_read(os.path.join(folder, "memory.stat")) or "")
    events = parse_keyed(_read(os.path.join(folder, names[2])) or "")
    usage = max(0, int(usage_text.strip()) - stat.get(names[3], 0))
    limit = parse_limit(_read(os.path.join(folder, names[0])), host)
    return CgroupMemory(folder, version, limit, usage, events.get("oom_kill"))


def binding(folder: str, version: int, top: str, host: int | None) -> CgroupMemory | None:
    """The tightest limit from `folder` up to the hierarchy's mount point `top` (the job's
    limit is usually set on an ancestor of the task's own cgroup); the folder's own memory
    when no ancestor limits it."""
    best: CgroupMemory | None = None
    here, stop = Path(folder), Path(top)
    while True:
        got = read_folder(str(here), version, host)
        if got is not None and got.limit is not None:
            if best is None or best.limit is None or got.limit < best.limit:
                best = got
        elif got is not None and best is None:
            best = got
        if here == stop or stop not in here.parents:
            break
        here = here.parent
    return best


def memory_of(pid: int | str = "self", host: int | None = None) -> CgroupMemory | None:
    """The memory cgroup that binds process `pid` (v2 first, then v1); one with no limit below
    the host's RAM counts only when nothing limits it (then `limit` is None)."""
    found = [binding(folder, mount.version, mount.point, host) for mount, folder in folders(pid)]
    known = [m for m in found if m is not None]
    limited = [m for m in known if m.limit is not None]
    return min(limited, key=lambda m: m.limit or 0, default=known[0] if known else None)
