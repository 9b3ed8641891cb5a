"""The logs a launcher writes per rank, read for the root cause (docs/runs.md).

torchrun with `--log-dir DIR` writes `DIR/<run id>_<random>/attempt_<restart>/<local
rank>/{stdout,stderr}.log`, one `<run id>_<random>` folder per torchrun, so per node
(torch.distributed.elastic.multiprocessing.api.DefaultLogsSpecs). For an attempt the newest
`attempt_*` of each folder changed while it ran is read: at most `MAX_FILES` bounded tails,
walked by descriptor (rtool.core.fdwalk: no link or folder of another user on the way, none
others can write), each file yours (or root's) and writable only by you. A file's header is
`==> PATH (rank R) <==` when one torchrun wrote them all (the local rank is the rank), else
`==> PATH () <==`.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Iterator, Sequence

from rtool.core.fdwalk import folder_problem, open_at, open_dir
from rtool.core.safeio import UnsafeFileError
from rtool.runs.logtail import CAUSE_LINES, cause_lines

#: Launchers whose `--log-dir` is read: torchrun, or python -m torch.distributed.run.
_TORCHRUN = re.compile(r"(?:^|/)torchrun$|^torch\.distributed\.(?:run|launch)$")
_OPTS = ("--log-dir", "--log_dir")
_ATTEMPT = re.compile(r"attempt_(\d{1,6})")
#: Files read at most per attempt, entries listed at most per folder, slack around the attempt.
MAX_FILES = 64
MAX_ENTRIES = 2000
SLACK = 120.0
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def log_dir_of(words: Sequence[str], cwd: str) -> str | None:
    """The absolute `--log-dir` of a torchrun launcher's words, else None."""
    if not any(_TORCHRUN.search(w) for w in words[:4]):
        return None
    for i, w in enumerate(words):
        for opt in _OPTS:
            if w == opt and i + 1 < len(words):
                return os.path.join(cwd, words[i + 1])
            if w.startswith(opt + "="):
                return os.path.join(cwd, w[len(opt) + 1 :])
    return None


def _subdir(fd: int, name: str) -> int | None:
    """A trusted sub-folder's descriptor (never through a link), else None."""
    try:
        sub = os.open(name, _DIR, dir_fd=fd)
    except OSError:
        return None
    if folder_problem(os.fstat(sub)):
        os.close(sub)
        return None
    return sub


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as it:
        return [e.name for e in itertools.islice(it, MAX_ENTRIES)]


def _runs(top: int, since: float, until: float) -> Iterator[tuple[str, int]]:
    """(name, descriptor) of each torchrun folder changed within [since, until]."""
    for name in sorted(_names(top)):
        try:
            st = os.stat(name, dir_fd=top, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and since <= st.st_mtime <= until:
            sub = _subdir(top, name)
            if sub is not None:
                yield name, sub


def _tail(dirfd: int, name: str, shown: str, limit: int) -> str | None:
    try:
        fd, st = open_at(dirfd, name, shown)
    except (OSError, UnsafeFileError):
        return None
    try:
        return os.pread(fd, limit, max(0, st.st_size - limit)).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def _files(run: int, shown: str) -> Iterator[tuple[int, str, int]]:
    """(folder descriptor, path shown, local rank) of the newest attempt's rank folders."""
    attempts = [(int(m.group(1)), n) for n in _names(run) if (m := _ATTEMPT.fullmatch(n))]
    if not attempts:
        return
    _, newest = max(attempts)
    att = _subdir(run, newest)
    if att is None:
        return
    try:
        for name in sorted((n for n in _names(att) if n.isdigit()), key=int):
            rank = _subdir(att, name)
            if rank is not None:
                yield rank, f"{shown}/{newest}/{name}", int(name)
    finally:
        os.close(att)


def read(log_dir: str, since: float, until: float, limit: int) -> list[str]:
    """The lines of the rank logs written between `since` and `until` (each file's last
    `limit` bytes), each file after its header; [] when there are none or the folder is
    refused."""
    try:
        top = open_dir(log_dir)
    except (OSError, UnsafeFileError):
        return []
    found: list[tuple[str, int, str]] = []
    try:
        runs = list(_runs(top, since - SLACK, until + SLACK))
        for name, run in runs:
            try:
                for fd, shown, rank in _files(run, f"{log_dir.rstrip('/')}/{name}"):
                    for stream in ("stderr.log", "stdout.log"):
                        if len(found) < MAX_FILES:
                            text = _tail(fd, stream, f"{shown}/{stream}", limit)
                            if text:
                                found.append((f"{shown}/{stream}", rank, text))
                    os.close(fd)
            finally:
                os.close(run)
    finally:
        os.close(top)
    out: list[str] = []
    for path, rank, text in found:
        out.append(f"==> {path} (rank {rank}) <==" if len(runs) == 1 else f"==> {path} () <==")
        out.extend(cause_lines(text)[-max(1, CAUSE_LINES // len(found)) :])
    return out
