"""Touching the kill and save switches (filesystem side effects); what each run's switches
are is recorded by `rtool submit` (rtool/runs/names.py)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Any

from rtool.core.identity import foreign_owner, writable_by_others
from rtool.core.safeio import UnsafeFileError, create_nofollow

#: Private by default; with `[switches] group_writable = true` the folders created for switches
#: are group-writable (setgid) and the switch files group-writable, so colleagues can stop a run.
DIR_MODE, FILE_MODE = 0o755, 0o644
GROUP_DIR_MODE, GROUP_FILE_MODE = 0o2775, 0o664


def folder_problem(folder: Path, group_writable: bool = False) -> str | None:
    """Why a switch may not live in `folder`: owned by someone else (not you or root), writable
    by others, or by the group unless `group_writable` is configured."""
    st = folder.stat()
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (os.getuid(), 0):
        return f"it is owned by uid {st.st_uid}, not by you"
    if mode & 0o002:
        return f"it is writable by everyone (mode {mode:04o})"
    if mode & 0o020 and not group_writable:
        return (
            f"it is group-writable (mode {mode:04o}); run chmod g-w {folder}, "
            "or set [switches] group_writable = true"
        )
    return None


def touch_switch(path: str | Path, group_writable: bool = False) -> Path:
    """Create (or touch) the switch file and its missing parent folders; never through a
    symlink, never in a folder another user controls (raises UnsafeFileError, one line)."""
    if any(ord(c) < 32 or c == "\x7f" for c in str(path)):
        raise UnsafeFileError(f"switch path {str(path)!r} contains a control character")
    p = Path(path).expanduser().absolute()
    dir_mode, file_mode = (
        (GROUP_DIR_MODE, GROUP_FILE_MODE) if group_writable else (DIR_MODE, FILE_MODE)
    )
    missing = [d for d in [p.parent, *p.parent.parents] if not os.path.lexists(d)]
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, 0o700)
        if stat.S_ISDIR(os.lstat(d).st_mode) and os.lstat(d).st_uid == os.getuid():
            with contextlib.suppress(OSError):
                os.chmod(d, dir_mode)
    try:
        problem = folder_problem(p.parent, group_writable)
    except OSError as exc:
        raise UnsafeFileError(f"cannot use switch folder {p.parent}: {exc.strerror}") from None
    if problem:
        raise UnsafeFileError(f"refusing switch folder {p.parent}: {problem}")
    try:
        if foreign_owner(p) is not None:  # another user's file would be ignored: replace it
            os.unlink(p)
        if create_nofollow(p, file_mode):
            with contextlib.suppress(OSError):
                os.chmod(p, file_mode)  # the umask may have narrowed it
    except OSError as exc:
        raise UnsafeFileError(f"cannot create switch {p}: {exc.strerror}") from None
    if foreign_owner(p) is not None:  # planted again in between
        raise UnsafeFileError(f"cannot create switch {p}: another user keeps a file there")
    return p


def foreign_switch(path: str | Path) -> str | None:
    """Why the file at a switch path does not count (another user made it), or None. The batch
    script and the shim ignore such a switch too (only yours or root's stop or save a run)."""
    p = Path(path).expanduser()
    owner = foreign_owner(p)
    if owner is None and p.is_symlink():
        owner = foreign_owner(p.resolve())
    return None if owner is None else f"it is owned by uid {owner}, not by you or root"


def folder_warnings(job: Any) -> list[str]:
    """One line per folder of the run's switches and heartbeat (its attempt records sit beside
    it) that other users may write into: their files there are ignored, but the folder is not
    private. Folders that do not exist yet are created private by rtool."""
    out, seen = [], set()
    for what, path in (
        ("kill switch", job.kill_switch),
        ("save switch", job.save_switch),
        ("heartbeat", job.heartbeat),
    ):
        if not path:
            continue
        folder = Path(path).expanduser().absolute().parent
        why = writable_by_others(folder)
        if why is None or folder in seen:
            continue
        seen.add(folder)
        out.append(
            f"warning: the folder of the {what}, {folder}, is {why}: other users can create "
            f"files there (rtool ignores switches and records they own); chmod go-w {folder}"
        )
    return out
