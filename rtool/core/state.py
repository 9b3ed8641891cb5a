"""The state dir: alert state, the outbox, histories and heartbeats.

Created 0700; refused when it is a symlink or not owned by the user. Every write is atomic
(temp file in the same folder, fsync, rename); writers are serialised by `StateDir.lock(name)`
(fcntl, bounded by `LOCK_WAIT`). State is best effort, never the verdict: a write the disk
cannot take (full, over quota, read-only) is logged, recorded in `StateDir.problems` (the CLI
reports them) and the caller goes on. A corrupt file is moved aside to `<name>.corrupt-<time>`
and read as missing; rtool never writes a file larger than it reads back (`write_json`'s
`shrink`), so nothing rtool wrote is moved aside.

`format.json` names the layout (`STATE_FORMAT`) and the rtool that made it: a layout from a
newer rtool is refused with one line (docs/upgrading.md); a folder without it (rtool 0.1) has
today's layout and gets the file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rtool import __version__
from rtool.core.errors import RtoolError
from rtool.core.safeio import (
    DEFAULT_LIMIT,
    UnsafeFileError,
    move_aside,
    read_bounded,
    read_json_file,
)

log = logging.getLogger(__name__)
#: The longest wait for a state lock (another rtool holding it that long is stuck).
LOCK_WAIT = 120.0
#: Write errors that mean "the disk cannot take it", not a bug: recorded, never raised.
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES})
#: The layout of the state dir this rtool reads and writes (rtool 0.1 wrote the same, unmarked).
STATE_FORMAT = 1
FORMAT_FILE = "format.json"


class StateDirError(RtoolError):
    """The state dir is unsafe or cannot be created."""


def default_state_dir() -> Path:
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "rtool"


def atomic_write(path: Path, data: str | bytes, mode: int = 0o600) -> None:
    """Write `data` to `path` so that readers see the old or the new content, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _flock(fd: int, wait: float) -> bool:
    """Take the exclusive lock on `fd`, waiting at most `wait` seconds."""
    deadline = time.monotonic() + wait
    pause = 0.01
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.25)


def _dumps(obj: Any) -> str:
    """Compact enough, readable, ASCII only (so its length is its size in bytes)."""
    return json.dumps(obj, indent=1, sort_keys=True, default=str, ensure_ascii=True)


class StateDir:
    """A checked, private folder for rtool's state. `look_only` (`rtool watch --dry-run`):
    nothing is created or written; writes land in an in-memory overlay that later reads of this
    process see, so a sweep behaves as it would while the folder stays as it was."""

    def __init__(self, path: str | Path | None = None, *, look_only: bool = False) -> None:
        self.path = Path(path).expanduser() if path else default_state_dir()
        #: State writes that failed (disk full, read-only...): one line each, reported by the CLI.
        self.problems: list[str] = []
        self.look_only = look_only
        #: look_only: what would have been written (relative path -> text)
        self.overlay: dict[str, str] = {}
        self._ensure()
        self._check_format()

    def write_failed(self, target: Path, exc: OSError) -> None:
        """Record a failed write (raise it again when it is not a disk problem)."""
        if exc.errno not in DISK_ERRORS:
            raise exc
        line = f"cannot write {target}: {exc.strerror}"
        if line not in self.problems:
            self.problems.append(line)
            log.warning("state dir: %s (state not saved; checks and alerts go on)", line)

    def _ensure(self) -> None:
        p = self.path
        if p.is_symlink():
            raise StateDirError(f"state dir {p} is a symlink; refusing to use it")
        if self.look_only and not p.exists():
            return  # created by the first real run
        try:
            p.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StateDirError(f"cannot create state dir {p}: {exc.strerror}") from exc
        st = p.lstat()
        if not stat.S_ISDIR(st.st_mode):
            raise StateDirError(f"state dir {p} is not a directory")
        if st.st_uid != os.getuid():
            raise StateDirError(f"state dir {p} is owned by uid {st.st_uid}, not by you")
        if stat.S_IMODE(st.st_mode) & 0o077 and not self.look_only:
            os.chmod(p, 0o700)

    def _check_format(self) -> None:
        """Refuse a layout written by a newer rtool; mark an unmarked (new or 0.1) folder."""
        if self.look_only and not self.path.is_dir():
            return  # nothing there yet (or not a folder: the first real run says so)
        data = read_json_file(self.path / FORMAT_FILE, aside=not self.look_only)
        if data is None:
            if not self.look_only:
                self._mark()
            return
        found = data.get("format")
        valid = isinstance(found, int) and not isinstance(found, bool) and found > 0
        if valid and found <= STATE_FORMAT:
            return
        if not valid:  # corrupt, not newer: say so, move it aside, mark the folder again
            if not self.look_only:
                move_aside(self.path / FORMAT_FILE, f"format {found!r} is not a version number")
                self._mark()
            return
        by = str(data.get("created_by") or "another rtool")[:60]
        raise StateDirError(
            f"state dir {self.path} has format {found!r} (made by {by}); rtool {__version__} "
            f"reads format {STATE_FORMAT}: run the newer rtool, or give this one its own "
            "[state] dir (docs/upgrading.md)"
        )

    def _mark(self) -> None:
        self.write_json(FORMAT_FILE, {"format": STATE_FORMAT, "created_by": f"rtool {__version__}"})

    def file(self, *parts: str) -> Path:
        """Path of a file inside the state dir (its folder is created)."""
        target = self.path.joinpath(*parts)
        if self.look_only:
            return target
        try:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:  # full or read-only: the write that follows records it
            if exc.errno not in DISK_ERRORS:
                raise
        return target

    def write_text(self, rel: str, text: str) -> None:
        if self.look_only:
            self.overlay[rel] = text
            return
        target = self.file(rel)
        try:
            atomic_write(target, text)
        except OSError as exc:
            self.write_failed(target, exc)

    def read_text(self, rel: str, default: str | None = None) -> str | None:
        if rel in self.overlay:
            return self.overlay[rel]
        target = self.path / rel
        try:
            return read_bounded(target, DEFAULT_LIMIT, follow=False)
        except FileNotFoundError:
            return default
        except UnsafeFileError as exc:
            if not self.look_only:
                move_aside(target, str(exc))
            return default

    def write_json(
        self, rel: str, obj: Any, *, shrink: Callable[[Any], Any | None] | None = None
    ) -> bool:
        """Write `obj` as JSON, never past the read bound (`DEFAULT_LIMIT`): a value that would
        not fit is handed to `shrink` (which returns a smaller one: the oldest entries dropped
        or summed up, or None when it cannot) until it fits; without one, or when it cannot,
        nothing is written (the file keeps its last content, the problem is reported). So no
        file rtool wrote is ever too big to read back and moved aside. True when written."""
        text = _dumps(obj)
        while len(text) > DEFAULT_LIMIT:
            smaller = shrink(obj) if shrink is not None else None
            if smaller is None:
                line = f"{rel} would exceed its cap of {DEFAULT_LIMIT} bytes; kept as it was"
                if line not in self.problems:
                    self.problems.append(line)
                    log.warning("state dir: %s", line)
                return False
            obj, text = smaller, _dumps(smaller)
        self.write_text(rel, text)
        return True

    def read_json(self, rel: str, default: Any = None) -> Any:
        """The JSON value in `rel`; `default` when missing. A corrupt file, or one whose type
        differs from `default`'s (a list where a dict belongs), is moved aside with a warning."""
        expect = type(default) if isinstance(default, (dict, list)) else object
        if rel in self.overlay:
            value = json.loads(self.overlay[rel])
            return value if isinstance(value, expect) else default
        value = read_json_file(self.path / rel, expect=expect, aside=not self.look_only)
        return default if value is None else value

    @contextlib.contextmanager
    def lock(self, name: str, *, blocking: bool = True) -> Iterator[bool]:
        """Hold the exclusive lock `name`; yields False (non-blocking) when another holds it.
        A blocking wait is bounded (`LOCK_WAIT`): past it StateDirError is raised. Look-only: no
        lock file, nothing to serialise (nothing is written)."""
        if self.look_only:
            yield True
            return
        path = self.file("locks", f"{name}.lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno not in DISK_ERRORS:
                raise
            self.write_failed(path, exc)  # no lock file possible: go on unserialised
            yield True
            return
        try:
            if not _flock(fd, LOCK_WAIT if blocking else 0.0):
                if blocking:
                    raise StateDirError(
                        f"state lock {name} held by another rtool for more than {LOCK_WAIT:g}s"
                    )
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
