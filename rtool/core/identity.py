"""Who rtool runs as, and whose files and jobs it may trust (stdlib only; the shim uses it).

The user is the process's uid, never `$USER`/`$LOGNAME` (any environment can set those: a job
submitted with `--export`, a `sudo -E` shell). rtool trusts what belongs to that uid or to root,
and nothing of anyone else (docs/security.md).
"""

from __future__ import annotations

import functools
import os
import pwd
import stat


def current_user() -> str:
    """The user name of this process's uid (its number when the passwd database has none)."""
    return _user_of(os.getuid())


@functools.lru_cache(maxsize=8)
def _user_of(uid: int) -> str:
    # Asked once per uid: `is_mine` runs for every job of a 10,000-job queue.
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def is_mine(user: str | None) -> bool:
    """True when `user` (a name, or a uid as Slurm prints it for an unknown user) is you."""
    if not user:
        return False
    uid = os.getuid()
    return user.strip() in (_user_of(uid), str(uid))


def trusted_uid(uid: int) -> bool:
    """You or root: the only owners whose files may steer your run."""
    return uid in (os.getuid(), 0)


def foreign_owner(path: str | os.PathLike[str]) -> int | None:
    """The owner of `path` (the entry itself: a symlink is not followed) when it is neither you
    nor root; None when it is yours or root's, or when there is nothing at `path`."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return None if trusted_uid(st.st_uid) else st.st_uid


def writable_by_others(path: str | os.PathLike[str]) -> str | None:
    """`group-writable (mode 2775)` or `world-writable (mode 0777)` for a folder or file that
    others may write into; None when only its owner may (or it cannot be read)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if mode & 0o002:
        return f"world-writable (mode {mode:04o})"
    if mode & 0o020:
        return f"group-writable (mode {mode:04o})"
    return None
