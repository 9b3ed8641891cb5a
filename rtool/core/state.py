"""The state dir: alert state, the outbox, histories and heartbeats.

Created 0700; refused when it is a symlink or not owned by the user. Every write is atomic
(temp file in the same folder, fsync, rename) and concurrent writers are serialised with
`StateDir.lock(name)` (an fcntl lock on a file in `locks/`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rtool.core.errors import RtoolError


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


class StateDir:
    """A checked, private folder for rtool's state."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path else default_state_dir()
        self._ensure()

    def _ensure(self) -> None:
        p = self.path
        if p.is_symlink():
            raise StateDirError(f"state dir {p} is a symlink; refusing to use it")
        try:
            p.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StateDirError(f"cannot create state dir {p}: {exc.strerror}") from exc
        st = p.lstat()
        if not stat.S_ISDIR(st.st_mode):
            raise StateDirError(f"state dir {p} is not a directory")
        if st.st_uid != os.getuid():
            raise StateDirError(f"state dir {p} is owned by uid {st.st_uid}, not by you")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(p, 0o700)

    def file(self, *parts: str) -> Path:
        """Path of a file inside the state dir (its folder is created)."""
        target = self.path.joinpath(*parts)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return target

    def write_text(self, rel: str, text: str) -> None:
        atomic_write(self.file(rel), text)

    def read_text(self, rel: str, default: str | None = None) -> str | None:
        try:
            return (self.path / rel).read_text()
        except FileNotFoundError:
            return default

    def write_json(self, rel: str, obj: Any) -> None:
        atomic_write(self.file(rel), json.dumps(obj, indent=1, sort_keys=True, default=str))

    def read_json(self, rel: str, default: Any = None) -> Any:
        text = self.read_text(rel)
        if text is None:
            return default
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return default

    @contextlib.contextmanager
    def lock(self, name: str, *, blocking: bool = True) -> Iterator[bool]:
        """Hold the exclusive lock `name`; yields False (non-blocking) when another holds it."""
        path = self.file("locks", f"{name}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
