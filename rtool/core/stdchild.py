"""What rtool's child processes share, in the standard library alone: the folder walk (rtool's
own is rtool.core.fdwalk, with the same rule; docs/security.md) and the bounded read of a JSON
file (a heartbeat) through its descriptor. The children (rtool/core/ckptscan.py,
rtool/watchdogs/probes/statfs_child.py) run with `python -I -S` and `import stdchild` from
rtool/core (put last on sys.path).
"""

import errno
import os
import stat

_DIRFLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: At most this many symlinks followed in one walk (as the kernel's own limit).
MAX_LINKS = 40


class Refused(Exception):
    """A component of the folder's path that must not be passed (one line)."""


def folder_problem(st, uid):
    """Why a folder on the way must not be passed: another user's, or writable by others
    without the sticky bit (they could rename or replace what is in it); else None."""
    if st.st_uid not in (uid, 0):
        return f"is owned by uid {st.st_uid}, not by you or root"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and not mode & stat.S_ISVTX:
        return f"is writable by group or others (mode {mode:04o}) without the sticky bit"
    return None


def owner_problem(st, uid):
    """Why a folder must not be passed when shared folders are allowed: another user's."""
    return None if st.st_uid in (uid, 0) else f"is owned by uid {st.st_uid}"


def _link(fd, name, shown, uid, links):
    """The target of the symlink `name` in `fd`, when it is yours or root's (Refused else)."""
    lst = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISLNK(lst.st_mode):
        raise Refused(f"{shown} is not a folder")
    if lst.st_uid not in (uid, 0):
        raise Refused(f"{shown} is a symlink owned by uid {lst.st_uid}")
    if links >= MAX_LINKS:
        raise Refused(f"{shown}: too many symlinks")
    return os.readlink(name, dir_fd=fd)


def follow(fd, done, target, todo):
    """Walk on along a symlink's `target` (its parts go on `todo`); an absolute one starts
    again at / (`fd`, the folder the link is in, is closed then). (descriptor, path so far)."""
    todo += [p for p in target.split("/") if p][::-1]
    if not target.startswith("/"):
        return fd, done
    os.close(fd)
    return os.open("/", _DIRFLAGS), ""


def open_folder(path, uid, shared=False):
    """A descriptor of `path` walked from / with O_NOFOLLOW|O_DIRECTORY: a symlink on the way
    only when yours or root's, no folder `folder_problem` refuses (the last one is judged by
    the caller); `shared`: every folder, the last included, judged by `owner_problem` only (a
    shared project folder passes). Refused (one line) or OSError (a missing folder)."""
    todo = [p for p in os.path.abspath(path).split("/") if p][::-1]
    fd, done, links = os.open("/", _DIRFLAGS), "", 0
    try:
        while todo:
            name = todo.pop()
            shown = done + "/" + name
            try:
                new = os.open(name, _DIRFLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                target = _link(fd, name, shown, uid, links)
                links += 1
                fd, done = follow(fd, done, target, todo)
                continue
            os.close(fd)
            fd, done = new, shown
            judge = owner_problem if shared else folder_problem if todo else None
            problem = judge(os.fstat(fd), uid) if judge else None
            if problem:
                raise Refused(f"{done} {problem}")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_json(fd, limit=65536, judge=None):
    """The JSON object in the open file `fd` (a regular file, at most `limit` bytes, that
    `judge(fstat)` does not refuse with a reason); else {"_invalid": True, "why": ...}."""
    import json

    try:
        st = os.fstat(fd)
        why = judge(st) if judge is not None else None
        if not stat.S_ISREG(st.st_mode):
            why = "not a regular file"
        if why:
            return {"_invalid": True, "why": why}
        data = os.read(fd, limit + 1)
    except OSError as exc:
        return {"_invalid": True, "why": exc.strerror}
    if len(data) > limit:
        return {"_invalid": True, "why": f"larger than {limit} bytes"}
    try:
        value = json.loads(data)
    except ValueError:
        return {"_invalid": True}
    return value if isinstance(value, dict) else {"_invalid": True}
