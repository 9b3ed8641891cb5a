"""Bounded reads of files other programs write (training logs, the batch script's records).

Only regular files owned by the user (or root) and not writable by group or others are read
(a hostile neighbour must not be able to plant alert text); symlinks are not followed; at most
`limit` bytes from the end are read. A log pattern with `%t` or `%N` names one log per task or
node: `read_logs` reads each (after `==> PATH (task T, node N) <==`, as `tail` does).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence

from rtool.core.alert import clip

#: Default bytes read from the end of a log.
TAIL_BYTES = 64 * 1024
#: Lines of a log tail kept in an attempt and shown in alerts, and their width.
TAIL_LINES = 12
LINE_WIDTH = 200
#: Lines of a log searched for the root cause, and their width.
CAUSE_LINES = 5000
CAUSE_WIDTH = 4000
#: Per-task or per-node logs of one attempt read at most.
MAX_LOGS = 64


class UntrustedFile(OSError):
    """A file rtool refuses to read (not a regular file, foreign owner, writable by others)."""


def read_tail(path: str, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of `path` (decoded leniently). Raises OSError/UntrustedFile."""
    return read_tail_cut(path, limit)[0]


def read_tail_cut(path: str, limit: int = TAIL_BYTES) -> tuple[str, int]:
    """(`read_tail`, the bytes before the part read: 0 when the whole file was read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedFile(f"{path} is not a regular file")
        if st.st_uid not in (os.getuid(), 0):
            raise UntrustedFile(f"{path} is owned by uid {st.st_uid}")
        if st.st_mode & 0o022:
            raise UntrustedFile(f"{path} is writable by group or others")
        start = max(0, st.st_size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, limit)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    if start > 0 and "\n" in text:
        text = text.split("\n", 1)[1]  # drop the partial first line
    return text, start


def tail_lines(text: str, n: int = TAIL_LINES, width: int = LINE_WIDTH) -> tuple[str, ...]:
    """The last `n` non-empty lines, each cut to `width` characters, control chars removed."""
    lines = [ln.rstrip() for ln in text.replace("\r", "\n").split("\n") if ln.strip()]
    clean = ("".join(c if c.isprintable() or c == "\t" else "?" for c in ln) for ln in lines[-n:])
    return tuple(clip(ln, width) for ln in clean)


def cause_lines(text: str) -> tuple[str, ...]:
    """The lines the root cause is looked for in: the last `CAUSE_LINES`, `CAUSE_WIDTH` wide."""
    return tail_lines(text, CAUSE_LINES, CAUSE_WIDTH)


def shown(lines: Sequence[str]) -> tuple[str, ...]:
    """The lines an attempt keeps and an alert shows: the last `TAIL_LINES`, `LINE_WIDTH` wide
    (the per-task headers left out)."""
    kept = [ln for ln in lines if not (ln.startswith("==> ") and ln.endswith(" <=="))]
    return tuple(clip(ln, LINE_WIDTH) for ln in kept[-TAIL_LINES:])


def expand(path: str, nodes: Sequence[str]) -> list[tuple[str, int | None, str | None]]:
    """The logs a path with `%t` (task) or `%N` (node) names: (path, task, node), by task; a
    plain path is itself."""
    if "%t" not in path and "%N" not in path:
        return [(path, None, None)]
    folder, name = os.path.split(path)
    parts = re.split(r"(%t|%N)", name)
    rx = "".join(
        r"(?P<t>\d{1,6})" if p == "%t" else r"(?P<n>[\w.-]{1,100})" if p == "%N" else re.escape(p)
        for p in parts
    )
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        return []
    out: list[tuple[str, int | None, str | None]] = []
    for entry in names:
        m = re.fullmatch(rx, entry)
        if not m:
            continue
        task = int(m.group("t")) if "t" in m.groupdict() and m.group("t") else None
        node = m.groupdict().get("n")
        if node is not None and nodes and node not in nodes:
            continue
        out.append((os.path.join(folder, entry), task, node))
    out.sort(key=lambda x: (x[1] if x[1] is not None else -1, x[2] or ""))
    return out[:MAX_LOGS]


def read_logs(path: str, nodes: Sequence[str], limit: int) -> tuple[str, tuple[str, ...]] | None:
    """The cause lines of the log(s) `path` names (see `expand`); None when none exists.
    Raises UntrustedFile (or OSError) for a single log rtool refuses to read."""
    logs = expand(path, nodes)
    if len(logs) == 1 and logs[0][0] == path:
        try:
            return path, cause_lines(read_tail(path, limit))
        except FileNotFoundError:
            return None
    out: list[str] = []
    each = max(64 * 1024, limit // max(1, len(logs)))
    for p, task, node in logs:
        try:
            lines = cause_lines(read_tail(p, each))
        except OSError:  # a missing or untrusted per-task log is left out
            continue
        who = ", ".join(
            x for x in (f"task {task}" if task is not None else "", node and f"node {node}") if x
        )
        out.append(f"==> {p} ({who}) <==")
        out.extend(lines[-max(1, CAUSE_LINES // max(1, len(logs))) :])
    return (path, tuple(out)) if out else None
