"""Reading files other people could have written or broken, safely (stdlib only).

Every file rtool reads goes through one bounded reader (`read_bounded`): it never blocks on a
FIFO, refuses what is not a regular file with one line, reads at most `limit` bytes and decodes
with replacement. `trust_problem`/`check_trusted` hold the owner rule of config files, cron jobs
and switch folders; `create_nofollow` and `append_fd` never write through a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any

from rtool.core.errors import RtoolError

log = logging.getLogger(__name__)

#: Default bound of one read (config, state, outbox items, heartbeats, job files).
DEFAULT_LIMIT = 4 * 1024 * 1024


class UnsafeFileError(RtoolError):
    """A file that is not a regular file, too big, or not trustworthy."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


def kind_of(path: str | os.PathLike[str]) -> str:
    """What `path` is, in words: `a file`, `a folder`, `a FIFO`, `a device`, `a symlink`..."""
    mode = os.lstat(path).st_mode
    return "a file" if stat.S_ISREG(mode) else _kind(mode)


def open_regular(path: str | os.PathLike[str], extra: int = 0) -> tuple[int, os.stat_result]:
    """`path` opened read-only (never blocking on a FIFO or a device; `extra` flags added): its
    descriptor and fstat, checked a regular file. UnsafeFileError (nothing left open) for a
    folder or anything else; other OSErrors (missing, permission) pass through."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0) | extra
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise UnsafeFileError(f"{path} is a folder, not a file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{path} is {_kind(st.st_mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_bytes_bounded(
    path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, *, follow: bool = True
) -> bytes:
    """At most `limit` bytes of the regular file `path`; raises FileNotFoundError when it is
    missing, UnsafeFileError (one line) when it is not a regular file or is larger than `limit`.
    """
    try:
        fd, st = open_regular(path, 0 if follow else os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(f"{path} is a symlink; refusing to follow it") from None
        if isinstance(exc, FileNotFoundError):
            raise
        raise UnsafeFileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        if st.st_size > limit:
            raise UnsafeFileError(f"{path} is too large ({st.st_size} bytes, limit {limit})")
        return read_fd(fd, str(path), limit)  # UnsafeFileError when it grew while we read
    except OSError as exc:
        raise UnsafeFileError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_fd(fd: int, shown: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """At most `limit` bytes of the open file `fd` from its start (UnsafeFileError past it)."""
    chunks, total = [], 0
    while total <= limit:
        chunk = os.pread(fd, min(1 << 20, limit + 1 - total), total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise UnsafeFileError(f"{shown} is too large (more than {limit} bytes)")
    return b"".join(chunks)


def read_bounded(
    path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, *, follow: bool = True
) -> str:
    """The text of `path` (UTF-8, undecodable bytes replaced); see `read_bytes_bounded`."""
    return read_bytes_bounded(path, limit, follow=follow).decode("utf-8", errors="replace")


def read_tail(path: str | os.PathLike[str], limit: int = 64 * 1024) -> str:
    """The last `limit` bytes of a regular file (a log), decoded with replacement."""
    fd, st = open_regular(path)
    try:
        os.lseek(fd, max(0, st.st_size - limit), os.SEEK_SET)
        return os.read(fd, limit).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def move_aside(path: Path, why: str) -> Path | None:
    """Rename a corrupt file (or folder) to `<name>.corrupt-<time>`, warning once; the caller
    goes on as if it were missing. Returns the new path (None if it could not be moved)."""
    target = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
    try:
        os.replace(path, target)
    except OSError as exc:
        log.warning("%s is corrupt (%s) and cannot be moved aside: %s", path, why, exc.strerror)
        return None
    log.warning("%s is corrupt (%s); moved aside to %s", path, why, target.name)
    return target


def read_json_file(
    path: Path, limit: int = DEFAULT_LIMIT, *, expect: type = dict, aside: bool = True
) -> Any:
    """The JSON value in `path` (of type `expect`), None when missing; a corrupt file is moved
    aside (see `move_aside`; left where it is with `aside=False`) and None returned."""
    why = None
    try:
        raw = read_bytes_bounded(path, limit, follow=False)
    except FileNotFoundError:
        return None
    except UnsafeFileError as exc:
        why = str(exc).removeprefix(f"{path} ")
    else:
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            why = f"not valid JSON: {type(exc).__name__}"
        else:
            if isinstance(value, expect):
                return value
            why = f"a JSON {type(value).__name__}, expected a {expect.__name__}"
    if aside:
        move_aside(path, why)
    return None


def trust_problem(path: str | os.PathLike[str], st: os.stat_result | None = None) -> str | None:
    """Why `path` must not be trusted (owned by another user, writable by group or others), or
    None when it is owned by the user or root and writable only by its owner."""
    if st is None:
        st = os.stat(path)
    if st.st_uid not in (os.getuid(), 0):
        return f"it is owned by uid {st.st_uid}, not by you or root"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        who = "group and others" if mode & 0o022 == 0o022 else "group" if mode & 0o020 else "others"
        return f"it is writable by {who} (mode {mode:04o}); run: chmod go-w {path}"
    return None


def check_trusted(
    path: str | os.PathLike[str], what: str, st: os.stat_result | None = None
) -> None:
    """Raise UnsafeFileError naming `what` when `path` (or the file a symlink points to, and the
    symlink itself) is not trustworthy; `st`: the fstat of the descriptor that will be read."""
    problem = trust_problem(path, st)
    if problem is None and os.path.islink(path):  # a link's own mode means nothing; its owner
        owner = os.lstat(path).st_uid
        if owner not in (os.getuid(), 0):
            problem = f"it is a symlink owned by uid {owner}, not by you or root"
    if problem:
        raise UnsafeFileError(f"refusing {what} {path}: {problem}")


def append_fd(path: str | os.PathLike[str], mode: int = 0o600) -> int:
    """A descriptor appending to the regular file `path` (created if missing); a symlink at
    `path` is refused (OSError ELOOP), a FIFO or device too (UnsafeFileError). For log files
    and `--tee` files in shared folders."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafeFileError(f"{path} is {_kind(st.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    return fd


def create_nofollow(path: str | os.PathLike[str], mode: int = 0o644) -> bool:
    """Create `path` if missing, else update its mtime; never through a symlink (the final
    component is opened with O_NOFOLLOW, and a FIFO or device is refused). True if created."""
    base = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    created = True
    try:
        fd = os.open(path, base | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        created = False
        try:
            fd = os.open(path, base)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise UnsafeFileError(f"{path} is a symlink; refusing to follow it") from None
            if exc.errno in (errno.EISDIR, errno.ENXIO):
                raise UnsafeFileError(f"{path} is not a regular file") from None
            raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{path} is {_kind(st.st_mode)}, not a regular file")
        if not created:
            os.utime(fd)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return created
