"""The kill and save switches as the shim sees them: set only when yours or root's.

A switch file owned by another user (a colleague's, or one planted in a shared group-writable
folder) is ignored, never obeyed, and reported once per file: a warning in the training's log
naming the path and the owner's uid (docs/security.md). A symlinked switch counts only when the
link and the file it points to are both yours (or root's).
"""

from __future__ import annotations

import logging
import os
import threading

from rtool.core.identity import trusted_uid

log = logging.getLogger("rtool.shim")

_reported: set[tuple[str, int, int]] = set()
_lock = threading.Lock()


def file_ident(path: str, what: str = "save") -> tuple[int, int] | None:
    """(inode, mtime_ns) of the switch at `path` when it is set and trusted; None when it is
    absent or another user's (reported once)."""
    try:
        st, lst = os.stat(path), os.lstat(path)
    except OSError:
        return None
    foreign = next((s.st_uid for s in (lst, st) if not trusted_uid(s.st_uid)), None)
    if foreign is None:
        return (st.st_ino, st.st_mtime_ns)
    key = (path, st.st_ino, foreign)
    with _lock:
        first = key not in _reported
        _reported.add(key)
    if first:
        log.warning(
            "rtool.shim: ignoring %s switch %s: it is owned by uid %d, not by you or root",
            what,
            path,
            foreign,
        )
    return None


def switch_set(path: str | None, what: str = "kill") -> bool:
    """The switch at `path` is set by you or root (another user's is reported and ignored)."""
    return bool(path) and file_ident(str(path), what) is not None
