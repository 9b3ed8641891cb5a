"""Child-process filesystem probe (stdlib only, run as a script, never imported by rtool).

    python -I -S statfs_child.py statvfs PATH
    python -I -S statfs_child.py logstat PATTERN [HEARTBEAT]

Prints one JSON object on stdout. rtool runs it in its own session with stdout/stderr on
pipes it reads, so a statfs stuck on a dead mount (uninterruptible, even by SIGKILL) holds
only this process, never rtool's caller (`rtool watch disk ... | tee -a train.log`).
"""

import glob
import json
import os
import sys
from typing import Any


def statvfs(path):
    st = os.statvfs(path)
    keys = ("frsize", "blocks", "bfree", "bavail", "files", "ffree", "favail")
    return {k: getattr(st, "f_" + k) for k in keys}


def _newest(pattern):
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
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except OSError:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return {"_invalid": True}
    return value if isinstance(value, dict) else {"_invalid": True}


def logstat(pattern, heartbeat=None):
    out: dict[str, Any] = {"path": None, "heartbeat": None, "done": False}
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
    try:
        if argv[0] == "statvfs":
            result = {"ok": True, "statvfs": statvfs(argv[1])}
        elif argv[0] == "logstat":
            result = {"ok": True, "logstat": logstat(argv[1], argv[2] if len(argv) > 2 else None)}
        else:
            result = {"ok": False, "error": "unknown mode " + argv[0]}
    except OSError as exc:
        result = {"ok": False, "error": exc.strerror or str(exc)}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
