"""The kill and save switches as the shim sees them: set only when yours or root's.

A switch file owned by another user (a colleague's, or one planted in a shared group-writable
folder) is ignored, never obeyed, and reported once per file: a warning in the training's log
naming the path and the owner's uid (docs/security.md). A symlinked switch counts only when the
link and the file it points to are both yours (or root's); its folder is reached by walking
from / (rtool.core.fdwalk): a symlink another user planted at a folder above is refused too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from rtool.core.identity import trusted_uid
from rtool.shim.state import Sources

log = logging.getLogger("rtool.shim")

_reported: set[tuple[str, int, int]] = set()
_lock = threading.Lock()


def _stats(path: str) -> tuple[os.stat_result, os.stat_result] | str | None:
    """(stat, lstat) of the switch, its folder reached by rtool.core.fdwalk (a symlink another
    user planted at a folder above, or their folder on the way, is refused: the reason); None
    when it is absent."""
    from rtool.core.fdwalk import open_dir
    from rtool.core.safeio import UnsafeFileError

    parent, name = os.path.split(os.path.abspath(path))
    try:
        dirfd = open_dir(parent, check_last=False, shared_ok=True)
    except UnsafeFileError as exc:
        return str(exc)
    except OSError:
        return None
    try:
        return os.stat(name, dir_fd=dirfd), os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(dirfd)


def file_ident(path: str, what: str = "save") -> tuple[int, int] | None:
    """(inode, mtime_ns) of the switch at `path` when it is set and trusted; None when it is
    absent or another user's (reported once)."""
    got = _stats(path)
    if got is None:
        return None
    if isinstance(got, str):
        _report(what, path, got, 0, -1)
        return None
    st, lst = got
    foreign = next((s.st_uid for s in (lst, st) if not trusted_uid(s.st_uid)), None)
    if foreign is None:
        return (st.st_ino, st.st_mtime_ns)
    _report(what, path, f"it is owned by uid {foreign}, not by you or root", st.st_ino, foreign)
    return None


def _report(what: str, path: str, why: str, ino: int, owner: int) -> None:
    key = (path, ino, owner)
    with _lock:
        first = key not in _reported
        _reported.add(key)
    if first:
        log.warning("rtool.shim: ignoring %s switch %s: %s", what, path, why)


def switch_set(path: str | None, what: str = "kill") -> bool:
    """The switch at `path` is set by you or root (another user's is reported and ignored)."""
    return bool(path) and file_ident(str(path), what) is not None


def take_save(path: str | None, s: Sources) -> tuple[int, int] | None:
    """Mark the save switch as handled, so the thread does not request it again."""
    with s.lock:
        ident = s.save_ident
        if ident is None and path:
            ident = file_ident(path)  # seen on another rank only
        s.save_handled, s.save_ident = ident, None
    return ident


def remove_save(
    path: str | None, ident: tuple[int, int] | None, s: Sources, step: int | None
) -> None:
    """After the agreed save returned: remove the save switch it saved for (rank 0 does)."""
    if path is None or ident is None:
        return
    with s.lock:
        if file_ident(path) == ident:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    log.info("rtool.shim: saved at step %s on request of %s", step, path)
