"""Child-process filesystem probe (stdlib only, run as a script, never imported by rtool).

    python -I -S statfs_child.py statvfs PATH [PATH ...]
    python -I -S statfs_child.py logstat PATTERN [HEARTBEAT]

`statvfs` probes every PATH at once, each in its own thread, and prints JSON lines as they
come: `{"i": N, "tid": T}` when path N's thread starts (T: its kernel thread id),
`{"i": N, "real": R, "dev": "major:minor"}` once the path is resolved (its real mount), then
`{"i": N, "ok": true, "statvfs": {...}}` or `{"i": N, "ok": false, "error": "..."}` when its
statvfs returns. A hung mount holds only its own thread: the other paths answer at once.
`logstat` prints one JSON object: the newest log file matching a glob, the heartbeat and its
`.done` marker, each counted only when it is yours (or root's) and writable only by you (judged
on the descriptor that is read); the others are listed under `ignored`. rtool runs this in
its own session with stdout/stderr on pipes it reads, so a statfs stuck on a dead mount
(uninterruptible, even by SIGKILL) holds only this process, never rtool's caller
(`rtool watch disk ... | tee -a train.log`).
"""

import os
import stat
import sys
import threading

# Start-up counts (one of these runs per `rtool watch disk`): `statvfs` imports nothing more;
# json and glob (which pulls in re, enum, ...) are imported where they are needed.

_WRITE = threading.Lock()
_KEYS = ("frsize", "blocks", "bfree", "bavail", "files", "ffree", "favail")


def statvfs(path):
    st = os.statvfs(path)
    return {k: getattr(st, "f_" + k) for k in _KEYS}


def _emit(line):
    """One JSON line on stdout, written whole (one line per write, under a lock)."""
    data = (line + "\n").encode()
    with _WRITE:
        while data:
            data = data[os.write(1, data) :]


def _statvfs_one(i, path):
    _emit(f'{{"i": {i:d}, "tid": {threading.get_native_id():d}}}')
    import json

    try:
        real = os.path.realpath(path)
        dev = os.stat(real).st_dev
        _emit(json.dumps({"i": i, "real": real, "dev": f"{os.major(dev)}:{os.minor(dev)}"}))
        st = statvfs(path)
    except OSError as exc:
        _emit(json.dumps({"i": i, "ok": False, "error": exc.strerror or str(exc)}))
        return
    fields = ", ".join(f'"{k}": {v:d}' for k, v in st.items())
    _emit(f'{{"i": {i:d}, "ok": true, "statvfs": {{{fields}}}}}')


def statvfs_each(paths):
    threads = [
        threading.Thread(target=_statvfs_one, args=(i, p), daemon=True) for i, p in enumerate(paths)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _yours(st, uid):
    """None when `st` is yours or root's and writable only by its owner; else why not."""
    if st.st_uid not in (uid, 0):
        return f"owned by uid {st.st_uid}"
    if stat.S_IMODE(st.st_mode) & 0o022:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _judge(p, uid, ignored):
    """(path, stat) of the log file `p` when it counts: a file (a symlink only when yours, to
    a file that is yours) of yours or root's; another user's is named in `ignored`."""
    try:
        lst = os.lstat(p)
        st = os.stat(p) if stat.S_ISLNK(lst.st_mode) else lst
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    link = stat.S_ISLNK(lst.st_mode) and lst.st_uid not in (uid, 0)
    why = f"a symlink owned by uid {lst.st_uid}" if link else _yours(st, uid)
    if why:
        ignored.append(f"{p} ({why})")
        return None
    return p, st


def _newest(pattern, uid, ignored):
    import glob

    if not glob.has_magic(pattern):
        if os.path.isdir(pattern):
            raise IsADirectoryError(21, "is a folder, not a log file (give a file or a glob)")
        return _judge(pattern, uid, ignored) if os.path.lexists(pattern) else None
    best, best_key = None, None
    for p in glob.glob(pattern):
        got = _judge(p, uid, ignored)
        if got is None:
            continue
        key = (got[1].st_mtime, p)
        if best_key is None or key > best_key:
            best, best_key = got, key
    return best


def _stdchild():
    """rtool/core/stdchild.py, what the children share (run as a script: found by folder)."""
    core = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core")
    if core not in sys.path:
        sys.path.append(core)
    import stdchild

    return stdchild


def _open_checked(path, uid, ignored, what):
    """A descriptor of the regular file `path` (its folder walked from / by stdchild, owners
    only: a shared project folder passes; never through a symlink at its name) when it is
    yours (or root's) and writable only by you; another's is named in `ignored`."""
    folder, name = os.path.split(os.path.abspath(path))
    walk = _stdchild()
    try:
        dirfd = walk.open_folder(folder, uid, shared=True)
    except walk.Refused as exc:
        ignored.append(f"{what} {path} ({exc})")
        return None
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW, dir_fd=dirfd)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a symlink at the name
            ignored.append(f"{what} {path} (a symlink)")
        return None
    finally:
        os.close(dirfd)
    st = os.fstat(fd)
    why = _yours(st, uid)
    if why:
        os.close(fd)
        ignored.append(f"{what} {path} ({why})")
        return None
    return fd


def logstat(pattern, heartbeat=None):
    """The newest log file that counts, the heartbeat and its done marker, each judged on the
    descriptor that is read (yours or root's, writable only by you); the rest in `ignored`."""
    uid = os.getuid()
    ignored: list = []  # what did not count, named
    out: dict = {"path": None, "heartbeat": None, "done": False, "ignored": ignored}
    got = _newest(pattern, uid, ignored)
    if got is not None:
        path, st = got
        out.update(path=path, size=st.st_size, mtime=st.st_mtime, ino=st.st_ino, dev=st.st_dev)
    if heartbeat:
        fd = _open_checked(heartbeat, uid, ignored, "heartbeat")
        if fd is not None:
            try:
                out["heartbeat"] = _stdchild().read_json(fd)
                out["heartbeat_mtime"] = os.fstat(fd).st_mtime
            finally:
                os.close(fd)
        done = heartbeat + ".done"  # the shim's done marker
        if os.path.lexists(done):
            fd = _open_checked(done, uid, ignored, "done marker")
            out["done"] = fd is not None
            if fd is not None:
                os.close(fd)
    return out


def main(argv):
    if argv[0] == "statvfs":
        statvfs_each(argv[1:])
        return 0
    try:
        if argv[0] == "logstat":
            result = {"ok": True, "logstat": logstat(argv[1], argv[2] if len(argv) > 2 else None)}
        else:
            result = {"ok": False, "error": "unknown mode " + argv[0]}
    except OSError as exc:
        result = {"ok": False, "error": exc.strerror or str(exc)}
    import json

    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
