"""Child-process filesystem probe (stdlib only, run as a script, never imported by rtool).

    python -I -S statfs_child.py statvfs PATH [PATH ...]
    python -I -S statfs_child.py logstat PATTERN [HEARTBEAT]

`statvfs` probes every PATH at once, each in its own thread, and prints JSON lines as they
come: `{"i": N, "tid": T}` when path N's thread starts (T: its kernel thread id),
`{"i": N, "real": R, "dev": "major:minor"}` once the path is resolved (its real mount), then
`{"i": N, "ok": true, "statvfs": {...}}` or `{"i": N, "ok": false, "error": "..."}` when its
statvfs returns. A hung mount holds only its own thread: the other paths answer at once.
`logstat` prints one JSON object. rtool runs this in its own session with stdout/stderr on
pipes it reads, so a statfs stuck on a dead mount (uninterruptible, even by SIGKILL) holds
only this process, never rtool's caller (`rtool watch disk ... | tee -a train.log`).
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


def _newest(pattern):
    import glob

    if not glob.has_magic(pattern):
        return pattern if os.path.exists(pattern) else None
    best, best_key = None, None
    for p in glob.glob(pattern):
        try:
            st = os.stat(p)
        except OSError:
            continue
        key = (st.st_mtime, p)
        if best_key is None or key > best_key:
            best, best_key = p, key
    return best


def _read_json(path, limit=65536):
    """A FIFO or device never blocks this (O_NONBLOCK, regular files only); at most `limit`."""
    import json

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"_invalid": True, "why": "not a regular file"}
        data = os.read(fd, limit + 1)
    except OSError as exc:
        return {"_invalid": True, "why": exc.strerror}
    finally:
        os.close(fd)
    if len(data) > limit:
        return {"_invalid": True, "why": f"larger than {limit} bytes"}
    try:
        value = json.loads(data)
    except ValueError:
        return {"_invalid": True}
    return value if isinstance(value, dict) else {"_invalid": True}


def logstat(pattern, heartbeat=None):
    out: dict = {"path": None, "heartbeat": None, "done": False}
    path = _newest(pattern)
    if path is not None:
        st = os.stat(path)
        out.update(path=path, size=st.st_size, mtime=st.st_mtime, ino=st.st_ino, dev=st.st_dev)
    if heartbeat:
        out["heartbeat"] = _read_json(heartbeat)
        if out["heartbeat"] is not None:
            out["heartbeat_mtime"] = os.stat(heartbeat).st_mtime
        out["done"] = os.path.exists(heartbeat + ".done")  # the shim's done marker
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
