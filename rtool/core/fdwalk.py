"""Open what rtool acts on by walking from `/` with directory descriptors, then act through them.

The descriptor rule (docs/security.md): never check a path and then use the same path again.
`open_dir` walks one component at a time with `openat(O_NOFOLLOW|O_DIRECTORY)` and refuses a
folder that is another user's, or that others can write into without the sticky bit (they could
rename your entries there); a symlink on the way is followed only when yours or root's. The
caller then acts relative to the descriptor (`open_at`, `read_fd`, `unlinkat` with `dir_fd`).
The same rule in the standard library alone is rtool/core/stdchild.py (retention's child).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rtool.core.identity import trusted_uid
from rtool.core.safeio import DEFAULT_LIMIT, UnsafeFileError, read_fd, trust_problem
from rtool.core.stdchild import MAX_LINKS, follow

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC


def folder_problem(st: os.stat_result) -> str | None:
    """Why a folder on the way must not be passed: another user's, or writable by others
    without the sticky bit (they could rename or replace what is in it)."""
    if not trusted_uid(st.st_uid):
        return f"is owned by uid {st.st_uid}, not by you or root"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and not mode & stat.S_ISVTX:
        who = "others" if mode & 0o002 else "group"
        return f"is writable by {who} (mode {mode:04o}) without the sticky bit"
    return None


def _step(fd: int, name: str, shown: str) -> tuple[int, str | None]:
    """(descriptor of `name` in `fd`, None) or (-1, link target) when it is a trusted symlink."""
    try:
        return os.open(name, _DIR, dir_fd=fd), None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        raise UnsafeFileError(f"{shown} is not a folder")
    if not trusted_uid(st.st_uid):
        raise UnsafeFileError(f"refusing {shown}: a symlink owned by uid {st.st_uid}")
    return -1, os.readlink(name, dir_fd=fd)


def open_dir(
    path: str | os.PathLike[str], *, check_last: bool = True, shared_ok: bool = False
) -> int:
    """A descriptor of the folder `path` reached as described above (the caller closes it).
    Raises UnsafeFileError (one line) for a refused component, OSError when missing.
    `shared_ok`: folders others can write are passed too (owners and links still checked: for
    presence checks such as the switches, where a shared project folder is allowed)."""
    todo = [p for p in os.path.abspath(path).split("/") if p][::-1]
    fd = os.open("/", _DIR)
    links, done = 0, ""
    try:
        while todo:
            name = todo.pop()
            if name == ".":
                continue
            shown = f"{done}/{name}"
            new, target = _step(fd, name, shown)
            if target is not None:
                links += 1
                if links > MAX_LINKS:
                    raise UnsafeFileError(f"{shown}: too many symlinks")
                fd, done = follow(fd, done, target, todo)
                continue
            os.close(fd)
            fd, done = new, shown
            st = os.fstat(fd)
            problem = folder_problem(st)
            if shared_ok and trusted_uid(st.st_uid):
                problem = None
            if problem and (todo or check_last):
                raise UnsafeFileError(f"refusing {done}: it {problem}")
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_at(dirfd: int, name: str, shown: str, *, trust: bool = True) -> tuple[int, os.stat_result]:
    """(descriptor, fstat) of the regular file `name` in the folder `dirfd`, never through a
    symlink; with `trust`, refused unless it is yours or root's and writable only by its owner."""
    try:
        fd = os.open(name, _FILE, dir_fd=dirfd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise UnsafeFileError(f"{shown} is a symlink; refusing to follow it") from None
        if exc.errno == errno.EISDIR:
            raise UnsafeFileError(f"{shown} is a folder, not a file") from None
        raise
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = f"{shown} is not a regular file"
    elif trust and (why := trust_problem(shown, st)):
        problem = f"refusing {shown}: {why}"
    if problem:
        os.close(fd)
        raise UnsafeFileError(problem)
    return fd, st


def read_checked(
    path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, *, trust: bool = True
) -> tuple[bytes, os.stat_result]:
    """(bytes, fstat) of the file `path`: its folder walked by `open_dir`, the file opened
    without following a link, checked on the descriptor and read from that same descriptor."""
    p = Path(os.path.abspath(path))
    dirfd = open_dir(p.parent)
    try:
        fd, st = open_at(dirfd, p.name, str(path), trust=trust)
    finally:
        os.close(dirfd)
    try:
        return read_fd(fd, str(path), limit), st
    finally:
        os.close(fd)
