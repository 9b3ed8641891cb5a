"""dirs: the scratch and checkpoint folders are writable and have `min_free` bytes free.

Each folder is probed in a child process bounded by the timeout (a hung network mount cannot
hang the pre-flight): it creates the folder if needed, writes, fsyncs and removes a small file
(made by mkstemp: a random name opened O_EXCL, never following a symlink another user planted
at a predictable name), and reads statvfs's f_bavail (what a user may write). The child runs
isolated (`python -I`): nothing is imported from the job's folder.
"""

from __future__ import annotations

import os

from pydantic import field_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Section, Size
from rtool.core.proc import ProcError, ProcTimeout
from rtool.core.proc import run as run_proc
from rtool.core.selfcmd import python_argv
from rtool.core.units import format_size
from rtool.nodes.preflight.base import NodeBase, Outcome

NAME = "dirs"


class Settings(Section):
    dirs: list[str] = setting(
        [], "A folder that must be writable, with min_free free (repeatable).", flag="--dir"
    )
    min_free: Size = setting(1024**3, "Free space each folder needs.")

    @field_validator("dirs")
    @classmethod
    def _home(cls, value: list[str]) -> list[str]:
        return [os.path.expanduser(d) for d in value]


_PROBE = r"""
import os, sys, tempfile
path, need = sys.argv[1], int(sys.argv[2])
try:
    os.makedirs(path, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".rtool-preflight-", dir=path)
    try:
        os.write(fd, b"rtool pre-flight\n")
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(name)
    st = os.statvfs(path)
except OSError as exc:
    print("not writable: %s" % (exc.strerror or exc))
    sys.exit(1)
free = st.f_bavail * st.f_frsize
print(free)
sys.exit(0 if free >= need else 2)
"""


def applies(ctx: NodeBase) -> bool:
    return bool(ctx.dirs)


def probe(path: str, min_free: int, timeout: float) -> str | None:
    """None when `path` is fine, else why not (one line)."""
    argv = python_argv("-c", _PROBE, path, str(min_free))  # -I: not the folder it runs in
    try:
        res = run_proc(argv, timeout=timeout, check=False)
    except ProcTimeout:
        return f"{path}: no answer within {timeout:g}s (hung filesystem?)"
    except ProcError as exc:
        return f"{path}: cannot probe: {exc}"
    out = res.stdout.strip()
    if res.returncode == 1:
        return f"{path}: {out}"
    if res.returncode == 2 and out.isdigit():
        return f"{path}: {format_size(int(out))} free, {format_size(min_free)} needed"
    if res.returncode != 0:
        return f"{path}: probe failed (exit {res.returncode}): {res.stderr.strip()[-200:]}"
    return None


def run(ctx: NodeBase) -> Outcome:
    problems = [p for p in (probe(d, ctx.min_free, ctx.timeout) for d in ctx.dirs) if p]
    if problems:
        return Outcome(NAME, False, "; ".join(problems))
    return Outcome(
        NAME, True, f"{len(ctx.dirs)} folder(s) writable, {format_size(ctx.min_free)} free"
    )
