"""Hangs caught inside the training process, and the ranks of one launch telling each other
(docs/shim.md, "Hangs caught in the process").

No step (nor `alive()`) for `hang_after` while no save runs and no stop was decided: dump the
stacks, write the abort file so the other ranks end too (rather than wait in a collective for a
peer that is gone), record why, exit HANG_EXIT_CODE (89) for the batch script's in-place
restart. Nothing is saved. A save on the way out that does not return in time is ended by
`ForcedExit`; faulthandler's C-level watchdog backs it up for a save stuck in C code holding the
GIL (it is process-wide: arming it replaces one the program set).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rtool.core.identity import trusted_uid
from rtool.shim.state import Timing

#: `hang_after = "auto"`: how many longest steps it is, its least value (seconds), and its least
#: value during the start-up grace of HANG_WARM steps.
HANG_STEPS, HANG_FLOOR, HANG_GRACE, HANG_WARM = 10, 5.0, 300.0, 20
#: Seconds `py-spy dump` may take.
PY_SPY_TIMEOUT = 10.0
_MAX_ABORT = 4096


@dataclass(frozen=True)
class Abort:
    """What one rank wrote into the abort file."""

    rank: int
    host: str
    pid: int
    launch: int
    reason: str  # hung, crashed, lost a peer
    detail: str

    def text(self) -> str:
        return f"rank {self.rank} on {self.host} {self.reason}: {self.detail}"


#: An exception that says a peer is gone (gloo's pair.cc, NCCL's remote error, a communicator
#: another rank aborted): the rank that raised it lost a peer, it did not fail on its own. A
#: plain socket's "Connection reset by peer" (a data loader's) is the rank's own failure.
PEER_GONE = re.compile(
    r"pair\.cc:\d{1,6}\][^\n]{0,200}Connection (?:closed|reset) by peer|ncclRemoteError"
    r"|remote process exiting prematurely|NCCL communicator was aborted on rank \d"
)


def crash_reason(error: str) -> str:
    """The abort file's reason for an uncaught exception: `lost a peer` when its text says a
    peer is gone (the others then do not blame this rank for a node that died), else `crashed`."""
    return "lost a peer" if PEER_GONE.search(error[:4096]) else "crashed"


def write_abort(path: str | None, abort: Abort) -> None:
    """Write the abort file (first writer wins; never follows a link)."""
    if not path:
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        _report_foreign(path)
        return
    except OSError:
        return
    with contextlib.suppress(OSError):
        try:
            os.write(fd, json.dumps(abort.__dict__).encode()[:_MAX_ABORT])
        finally:
            os.close(fd)


def _report_foreign(path: str) -> None:
    """Say so when the abort file that is in the way is not yours (it never counts)."""
    with contextlib.suppress(OSError):
        owner = os.lstat(path).st_uid
        if not trusted_uid(owner):
            sys.stderr.write(
                f"rtool.shim: ignoring abort file {path}: it is owned by uid {owner}, not by"
                " you; the other ranks are not told (the batch script's abort folder avoids"
                " this)\n"
            )


def read_abort(path: str | None, launch: int, pid: int) -> Abort | None:
    """Another process's abort of this launch, or None (missing, foreign, stale, ours)."""
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not trusted_uid(st.st_uid):
            return None
        d: Any = json.loads(os.read(fd, _MAX_ABORT))
        got = Abort(**{k: d[k] for k in Abort.__dataclass_fields__})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    finally:
        os.close(fd)
    return got if got.launch == launch and got.pid != pid else None


def py_spy() -> str | None:
    beside = os.path.join(sysconfig.get_path("scripts"), "py-spy")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")


def dump_stacks(header: str, to: str | None = None, head: str = "") -> None:
    """Every thread's stack to stderr: faulthandler (always), py-spy (where installed); and
    faulthandler's, after the line `head`, to the file `to` (this rank's, beside the abort
    file: rtool groups the ranks' stacks, rtool.runs.stacks)."""
    with contextlib.suppress(Exception):
        sys.stderr.write(f"rtool.shim: {header}; the stacks of all threads:\n")
        sys.stderr.flush()
    with contextlib.suppress(Exception):
        faulthandler.dump_traceback(all_threads=True)
    if to is not None:
        _dump_to(to, head)
    spy = py_spy()
    if spy is None:
        return
    with contextlib.suppress(Exception):
        res = subprocess.run(
            [spy, "dump", "--pid", str(os.getpid())],
            capture_output=True,
            text=True,
            timeout=PY_SPY_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        sys.stderr.write(f"rtool.shim: py-spy dump:\n{(res.stdout + res.stderr)[-20000:]}\n")
        sys.stderr.flush()


def _dump_to(path: str, head: str, frames: str | None = None) -> None:
    """`head`, then faulthandler's dump of every thread (or `frames`, in its form)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(Exception):
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, (head + "\n").encode())
            if frames is None:
                faulthandler.dump_traceback(file=fd, all_threads=True)
            else:
                os.write(fd, frames.encode())
        finally:
            os.close(fd)


def _frames(tb: TracebackType) -> str:
    """An exception's frames as faulthandler writes a thread's: innermost first."""
    lines = [f"Current thread 0x{threading.get_ident():016x} (most recent call first):"]
    for f in reversed(traceback.extract_tb(tb)):
        lines.append(f'  File "{f.filename}", line {f.lineno} in {f.name}')
    return "\n".join(lines) + "\n"


class HangWatch:
    """One round per poll: `check(mono, step, alive)` says, once, that another rank of this
    launch failed (its Abort) or that this one hung (the seconds without progress)."""

    def __init__(
        self, after: float | str | None, abort_file: str | None, launch: int, timing: Timing
    ) -> None:
        self.after, self.abort_file, self.launch, self.timing = after, abort_file, launch, timing
        self.settled = False  # a stop was decided (or the hang acted): nothing more to do
        self._last: tuple[int | None, int] | None = None
        self._since = 0.0

    def threshold(self) -> float | None:
        if self.after is None:
            return None
        if isinstance(self.after, (int, float)):
            return float(self.after)
        t, step = self.timing, self._last[0] if self._last is not None else None
        warm = t.first_step is not None and step is not None and step - t.first_step >= HANG_WARM
        warm = warm and t.saves > 0  # before a save is seen, one may be under way unannounced
        return max(HANG_FLOOR if warm else HANG_GRACE, HANG_STEPS * t.longest_step)

    def check(self, mono: float, step: int | None, alive: int) -> Abort | float | None:
        """Another rank's Abort, or the seconds this one has been hung, once; else None."""
        if self.settled:
            return None
        abort = self.peer()
        if abort is not None:
            self.settled = True
            return abort
        limit = self.threshold()
        if limit is None or step is None:  # counted from the first step: start-up is free
            return None
        if (step, alive) != self._last or self.timing.saving_since is not None:
            self._last, self._since = (step, alive), mono
            return None
        idle = mono - self._since
        if idle < limit:
            return None
        self.settled = True
        return idle

    def peer(self) -> Abort | None:
        """Another rank's abort of this launch, if one was written."""
        return read_abort(self.abort_file, self.launch, os.getpid())

    def stack_file(self, rank: int) -> tuple[str | None, str]:
        """(this rank's stack file beside the abort file, or None; its first line)."""
        head = f"rtool-stacks rank={rank} host={node_name()} pid={os.getpid()} launch={self.launch}"
        return (f"{self.abort_file}.stacks-{rank}" if self.abort_file else None), head

    def trace_to_file(self, rank: int, tb: TracebackType | None) -> None:
        """This rank's stack file from an exception's frames (where it was when it raised)."""
        to, head = self.stack_file(rank)
        if to is not None and tb is not None:
            _dump_to(to, head, _frames(tb))

    def abort(self, rank: int, reason: str, detail: str) -> None:
        """Tell the other ranks of this launch (the abort file)."""
        abort = Abort(rank, node_name(), os.getpid(), self.launch, reason, detail[:500])
        write_abort(self.abort_file, abort)


def node_name() -> str:
    """This node's name as Slurm knows it."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


#: Seconds after the timeout at which the C-level backup fires.
BACKUP = 30.0


class ForcedExit:
    def __init__(self, timeout: float, code: int, on_fire: Callable[[], None]) -> None:
        self.timeout = timeout
        self.code = code
        self._on_fire = on_fire
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        if self.timeout <= 0 or self._timer is not None:
            return
        timer = threading.Timer(self.timeout, self._fire)
        timer.daemon = True
        timer.start()
        self._timer = timer
        with contextlib.suppress(Exception):  # no usable stderr: the Python timer still works
            faulthandler.dump_traceback_later(self.timeout + BACKUP, exit=True)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            with contextlib.suppress(Exception):
                faulthandler.cancel_dump_traceback_later()

    def _fire(self) -> None:
        with contextlib.suppress(Exception):
            self._on_fire()
        end_dumped(self.code)


def end_dumped(code: int, dump: bool = True) -> None:
    """End the process now with `code`, every thread's traceback on stderr first (unless
    `dump` is False: the stacks were written already)."""
    if dump:
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(all_threads=True)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
        sys.stdout.flush()
    time.sleep(0)  # let a pending heartbeat write thread run
    os._exit(code)
