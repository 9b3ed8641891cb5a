"""The checkpoint scan (stdlib only): the checkpoint watchdog runs it as a child process, and
`rtool.shim.latest_checkpoint` imports it (the same rules for both; docs/guide/resume.md).

    python -I -S ckptscan.py scan '{"path": ..., "pattern": ..., "files": [...], ...}'
    python -I -S ckptscan.py prune '{"folder": ..., "names": [...]}'

`scan` lists one folder's checkpoints by name and lstat only (it never opens one, never follows
a symlink: a symlink is not a checkpoint), looks into the newest few and prints one JSON object;
every listing is bounded (`LIMIT`). `prune` removes the named checkpoints, each only when it is
not a symlink and all of it is this user's, through the descriptor of the folder walked from /
(`open_folder`: never a link another user made, never a folder others can rename things in).
rtool runs it in its own session with output on pipes, so a hung filesystem holds only it.
"""

import fnmatch
import json
import os
import re
import stat
import sys
import time

#: At most this many names of one folder, and this many files inside one checkpoint.
LIMIT = 100000
#: At most this many checkpoints are looked into (sizes, files) in one scan.
DETAIL_CAP = 64
#: Names with a step number that are checkpoints: step_000123, step-5, global_step7,
#: checkpoint-500 (Hugging Face), epoch=3-step=1200.ckpt (Lightning), iter_0001000
#: (Megatron), ckpt_12.pt. The last number after such a word is the step.
_STEP = re.compile(
    r"(?:^|[-_=.])(?:global_step|step|checkpoint|iter|ckpt)[-_=]?([0-9]{1,18})", re.IGNORECASE
)
#: Names that are never a checkpoint: hidden, temporary or being written under another name.
_SCRATCH = re.compile(r"^(?:\.|tmp|temp)|\.(?:tmp|temp|partial|incomplete|lock)$", re.I)
_KEYS = ("frsize", "blocks", "bfree", "bavail", "files", "ffree", "favail")

if __package__:  # imported: rtool.core.ckptscan
    from rtool.core.stdchild import Refused, folder_problem, open_folder, read_json
else:  # run as a script (python -I -S ckptscan.py): the file beside this one
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    from stdchild import Refused, folder_problem, open_folder, read_json  # type: ignore[no-redef]


def step_of(name):
    found = _STEP.findall(name)
    return int(found[-1]) if found else None


def is_marker(name, marker):
    """Whether `name` is a checkpoint's completion marker beside it in the folder (`{NAME}.done`
    names `step_000400.done`): a marker is never a checkpoint itself."""
    if not marker or "/" in marker or marker.count("{NAME}") != 1 or marker == "{NAME}":
        return False
    head, tail = marker.split("{NAME}")
    return len(name) > len(head) + len(tail) and name.startswith(head) and name.endswith(tail)


def _listed(path, pattern, marker=None):
    """(name, lstat) of the checkpoint candidates in `path`, at most LIMIT; symlinks and the
    completion markers of other names skipped."""
    out: list = []
    more = False
    with os.scandir(path) as it:
        for entry in it:
            if len(out) >= LIMIT:
                more = True
                break
            name = entry.name
            if _SCRATCH.search(name) or is_marker(name, marker):
                continue
            if pattern and not fnmatch.fnmatchcase(name, pattern):
                continue
            if not pattern and step_of(name) is None:
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                out.append((name, st))
    return out, more


def _walk(top):
    """(size, files, newest mtime, relative paths, truncated) of a checkpoint folder."""
    size, count, newest, stack = 0, 0, os.lstat(top).st_mtime, [("", top)]
    names: set = set()
    while stack:
        rel, where = stack.pop()
        with os.scandir(where) as it:
            for entry in it:
                if count >= LIMIT:
                    return size, count, newest, names, True
                st = entry.stat(follow_symlinks=False)
                sub = rel + entry.name
                newest = max(newest, st.st_mtime)
                if stat.S_ISDIR(st.st_mode):
                    stack.append((sub + "/", entry.path))
                    names.add(sub)
                elif not stat.S_ISLNK(st.st_mode):
                    size += st.st_size
                    count += 1
                    names.add(sub)
    return size, count, newest, names, False


#: The Hugging Face Trainer writes trainer_state.json last: without `files` or a `marker`,
#: a `checkpoint-N/` folder is complete when it holds one.
_HF = re.compile(r"checkpoint-[0-9]+")
HF_FILES = ["trainer_state.json"]


def _detail(folder, name, st, req):
    out = {"size": st.st_size, "files": 1, "newest": st.st_mtime, "truncated": False}
    inside = set()
    is_dir = stat.S_ISDIR(st.st_mode)
    if is_dir:
        size, count, newest, inside, cut = _walk(os.path.join(folder, name))
        out.update(size=size, files=count, newest=newest, truncated=cut)
    files, marker = req.get("files") or [], req.get("marker")
    if is_dir and not files and not marker and _HF.fullmatch(name):
        files = HF_FILES
    wanted = files if is_dir else []
    missing = [f for f in wanted if not any(fnmatch.fnmatchcase(n, f) for n in inside)]
    if marker:
        where = marker.replace("{NAME}", name)
        try:
            os.lstat(os.path.join(folder, where))
        except FileNotFoundError:
            missing.append(where)
    out["missing"] = missing
    return out


def _details(path, entries, req):
    """{index: detail} of the newest entries: back until `detail` of them are settled (not
    written within `settle` seconds) and one of those looks whole (files there, not empty),
    at most DETAIL_CAP (a full disk leaves a trail of empty saves behind the last good one)."""
    want, settle, now = int(req.get("detail", 4)), float(req.get("settle", 0)), time.time()
    found: dict = {}
    settled, whole = 0, False
    for i in reversed(range(len(entries))):
        if len(found) >= DETAIL_CAP or (settled >= want and whole):
            break
        name, st = entries[i]
        try:
            d = _detail(path, name, st, req)
        except FileNotFoundError:  # removed while we looked
            continue
        found[i] = d
        if d["newest"] <= now - settle:
            settled += 1
            whole = whole or (d["size"] > 0 and not d["missing"])
    return found


def _order(entries):
    """Oldest first: by step when every entry has one, else by mtime."""
    if all(step_of(n) is not None for n, _ in entries):
        return sorted(entries, key=lambda e: (step_of(e[0]), e[1].st_mtime, e[0]))
    return sorted(entries, key=lambda e: (e[1].st_mtime, e[0]))


def _read_json(path):
    """The heartbeat: a FIFO or device never blocks this (O_NONBLOCK, regular files only).
    Another user's (or one others can write) is ignored and named, judged on the descriptor
    that is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return read_json(fd, judge=_not_yours)
    finally:
        os.close(fd)


def _not_yours(st):
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (os.getuid(), 0):
        return f"ignored: owned by uid {st.st_uid}, not by you"
    if mode & 0o022:
        return f"ignored: writable by others (mode {mode:04o})"
    return None


def _say_where(path):
    """Print where `path` really is (symlinks followed, its st_dev) before touching its
    filesystem further: a probe that hangs there is remembered under that mount."""
    real = os.path.realpath(path)
    dev = os.stat(real).st_dev
    where = {"real": real, "dev": f"{os.major(dev)}:{os.minor(dev)}"}
    sys.stdout.write(json.dumps(where) + "\n")
    sys.stdout.flush()


def _in_folder(path, work):
    """`work(descriptor)` of the folder `path` walked from / (`open_folder`), closed after."""
    try:
        fd = open_folder(path, os.getuid())
    except Refused as exc:
        return {"ok": False, "error": f"refusing the folder: {exc}"}
    try:
        return work(fd)
    finally:
        os.close(fd)


def scan(req):
    _say_where(req["path"])
    return _in_folder(req["path"], lambda fd: _scan(req, fd))


def _scan(req, fd):
    path = f"/proc/self/fd/{fd}"  # every look below goes through the walked descriptor
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode):
        return {"ok": False, "error": "not a folder"}
    vfs = os.statvfs(path)
    entries, more = _listed(path, req.get("pattern"), req.get("marker"))
    entries = _order(entries)
    details = _details(path, entries, req)
    out = []
    for i, (name, est) in enumerate(entries):
        item = {
            "name": name,
            "step": step_of(name),
            "dir": stat.S_ISDIR(est.st_mode),
            "uid": est.st_uid,
            "mtime": est.st_mtime,
        }
        if i in details:
            item["detail"] = details[i]
        out.append(item)
    result = {
        "ok": True,
        "folder": {"uid": st.st_uid, "mode": stat.S_IMODE(st.st_mode), "mtime": st.st_mtime},
        "statvfs": {k: getattr(vfs, "f_" + k) for k in _KEYS},
        "entries": out,
        "more": more,
    }
    if req.get("heartbeat"):
        result["heartbeat"] = _read_json(req["heartbeat"])
    return result


def _foreign(dirfd, name, uid, shown):
    """The first path under `name` (in `dirfd`) not owned by `uid`, never following a link."""
    for root, dirs, files, rootfd in os.fwalk(name, follow_symlinks=False, dir_fd=dirfd):
        for entry in dirs + files:
            if os.stat(entry, dir_fd=rootfd, follow_symlinks=False).st_uid != uid:
                return os.path.join(shown, root, entry)
    return None


def _remove_tree(dirfd, name):
    """rm -r of `name` relative to `dirfd`: unlinkat/rmdir through descriptors only."""
    for _root, dirs, files, rootfd in os.fwalk(
        name, topdown=False, follow_symlinks=False, dir_fd=dirfd
    ):
        for entry in files:
            os.unlink(entry, dir_fd=rootfd)
        for entry in dirs:
            if stat.S_ISLNK(os.stat(entry, dir_fd=rootfd, follow_symlinks=False).st_mode):
                os.unlink(entry, dir_fd=rootfd)
            else:
                os.rmdir(entry, dir_fd=rootfd)
    os.rmdir(name, dir_fd=dirfd)


def prune_one(dirfd, name, uid, shown):
    if "/" in name or name in ("", ".", ".."):
        return "not a name in the folder"
    st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        return "a symlink"
    if st.st_uid != uid:
        return f"owned by uid {st.st_uid}"
    if stat.S_ISDIR(st.st_mode):
        other = _foreign(dirfd, name, uid, shown)
        if other is not None:
            return f"{other} is another user's"
        _remove_tree(dirfd, name)
    else:
        os.unlink(name, dir_fd=dirfd)
    return None


def prune(req):
    """Deletes relative to the folder's descriptor, walked again and judged as retention's
    rule says (yours, not writable by others), so a link or a rename on the way is refused."""
    return _in_folder(req["folder"], lambda dirfd: _prune(req, dirfd))


def _prune(req, dirfd):
    uid, st, done = os.getuid(), os.fstat(dirfd), []
    problem = folder_problem(st, uid)
    if not problem and stat.S_IMODE(st.st_mode) & 0o022:
        problem = f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    if problem:
        return {"ok": False, "error": f"refusing the folder: {req['folder']} {problem}"}
    for name in req["names"]:
        try:
            why = prune_one(dirfd, name, uid, req["folder"])
        except OSError as exc:
            why = exc.strerror or str(exc)
        done.append({"name": name, "ok": why is None, "why": why})
    return {"ok": True, "pruned": done}


def main(argv):
    modes = {"scan": scan, "prune": prune}
    try:
        result = modes[argv[0]](json.loads(argv[1]))
    except OSError as exc:
        result = {"ok": False, "error": exc.strerror or str(exc)}
    except (KeyError, IndexError, ValueError) as exc:
        result = {"ok": False, "error": f"bad request: {exc}"}
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
