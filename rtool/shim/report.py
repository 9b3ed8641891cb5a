"""What the guard tells the outside: heartbeat records at each event, crashes recorded.

Uncaught exceptions are recorded (type, message, last traceback line) before the process dies:
`CrashHooks` chains `sys.excepthook` and `threading.excepthook`: ours records, then the
previous hook runs (prints the traceback as before). `restore()` puts the previous hooks back
when ours are still the installed ones (a hook installed after ours is left alone).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

from rtool.core.heartbeat import ErrorInfo, RunState
from rtool.shim.checkpoints import last_resume
from rtool.shim.exit_need import exit_need
from rtool.shim.heartbeat_writer import HeartbeatWriter, JobIdentity
from rtool.shim.provenance import Provenance
from rtool.shim.state import Decision, Loop, Timing
from rtool.shim.steplog import StepLog
from rtool.shim.trackers import export as export_tracker_env
from rtool.shim.trackers import fields as tracker_fields


class Reporter:
    """Heartbeat writes of one Guard (none without a heartbeat path; rank 0 only writes)."""

    def __init__(
        self, path: str | os.PathLike[str] | None, ident: JobIdentity, timing: Timing, loop: Loop
    ) -> None:
        self.ident, self.timing, self.loop = ident, timing, loop
        self.writer = HeartbeatWriter(path, ident.base_record()) if path else None
        self.provenance = Provenance()  # collected from the first step on (rank 0)
        self.grace: float | None = None  # the GraceTime of a preemption under way
        self._straggler: dict[str, Any] = {}  # the slowest rank at the last agreement
        self.steps = StepLog()  # the recent agreements and the run's steady step times
        self._agreed = False  # the ranks agree (torch.distributed): the samples are theirs
        export_tracker_env(previous=self.writer.previous if self.writer is not None else None)
        if self.writer is not None:
            self.set_rank(ident.rank, ident.world_size)
            if self.writer.enabled:
                self.writer.clear_done()

    def agreed(self, slowest: dict[str, Any]) -> None:
        """An agreement's slowest rank (the guard tells it): kept in the step log too."""
        self._straggler, self._agreed = slowest, True
        self.steps.add(slowest)

    def carry_previous(self) -> None:
        """Start from what the previous run of this training measured and saved (its
        heartbeat): the longest step and save (the time-limit margins learn from them) and
        its last save (the checkpoint a resume starts from), until this run saves; and how
        long the stops of earlier attempts took to end their jobs (the batch records)."""
        self.timing.exit_need = exit_need(os.environ.get("RTOOL_RUN_RECORDS"))
        prev = self.writer.previous if self.writer is not None else None
        if prev is None or (prev.run and self.ident.run and prev.run != self.ident.run):
            return
        self.steps.carry(prev)
        t = self.timing
        t.longest_step = prev.longest_step_seconds or 0.0
        t.longest_save = prev.longest_save_seconds or 0.0
        if prev.last_saved_step is not None:
            t.last_save_step, t.last_save_time = prev.last_saved_step, prev.last_save_time
            t.last_save_seconds = prev.last_save_seconds
            t.recent_saves = [prev.last_save_seconds] if prev.last_save_seconds else []

    def set_rank(self, rank: int, world_size: int) -> None:
        if self.writer is not None:
            self.writer.enabled = rank == 0
            self.writer.current = self.writer.current.replace(rank=rank, world_size=world_size)

    def fields(self, step: int | None = None) -> dict[str, Any]:
        t = self.timing
        if t.first_step is not None and self.writer is not None and self.writer.enabled:
            self.provenance.start()
        return {
            **self.provenance.fields(),
            **tracker_fields(),
            **self._straggler,
            **self.steps.fields(),
            "step": self.loop.step if step is None else step,  # live: the thread's copy lags
            "time": (t.progress_time or time.time()) if step is None else time.time(),
            "step_at_start": t.first_step,
            "first_step_time": t.first_step_time,
            "step_seconds": t.recent_step,
            "longest_step_seconds": t.longest_step or None,
            "last_save_seconds": t.last_save_seconds,
            "longest_save_seconds": t.longest_save or None,
            "last_saved_step": t.last_save_step,
            "last_save_time": t.last_save_time,
            "nonfinite_count": t.nonfinite,
            **_resume_fields(),
        }

    def progress(self) -> None:
        """A periodic write (the monitor thread); one process (no agreements): its recent step
        time is a sample of the step log."""
        if self.writer is not None and not self._agreed and self.timing.recent_step:
            self.steps.add({"slowest_seconds": self.timing.recent_step})
        self.write()

    def write(self, state: RunState = RunState.RUNNING, step: int | None = None) -> None:
        """A write while the run goes on: `starting`, a save on the way out (`saving`), a save
        returned (`running`: its step and duration are in the heartbeat at once)."""
        if self.writer is not None:
            self.writer.progress(state, self.fields(step))

    def stopped(self, d: Decision, at_progress: bool = False) -> None:
        """A stop (`at_progress`: a hang, whose `time` stays the last progress)."""
        if self.writer is not None:
            fields = self.fields(None if at_progress else d.step)
            over = preempt_over(self.grace, fields.get("longest_save_seconds"))
            self.writer.final(RunState.STOPPED, {**fields, **self._stop(d), **over})

    def finished(self, step: int | None) -> None:
        if self.writer is not None:
            self.provenance.wait(2.0)  # a short run's record, complete
            self.writer.final(RunState.FINISHED, self.fields(step))
            self.writer.mark_done()

    def ours(self) -> bool:
        """This process writes the heartbeat (a forked child's exception is not ours)."""
        return self.writer is not None and os.getpid() == self.writer.current.pid

    def crashed(self, info: ErrorInfo, main_thread: bool) -> None:
        """An uncaught exception: `crashed` (another thread's: only `error` is set)."""
        w = self.writer
        if w is None or not self.ours():
            return
        if not main_thread:
            w.progress(w.current.state, {"error": info})
            return
        d = Decision(stopping=True, reason="crashed", exit_code=1, detail=str(info))
        fields = {**self.fields(), **self._stop(d), "error": info}
        fields["stop_step"] = fields["step"]
        w.final(RunState.CRASHED, fields)

    def _stop(self, d: Decision) -> dict[str, Any]:
        return {
            "stop_reason": d.reason,
            "stop_detail": d.detail,
            "stop_step": d.step,
            "stop_time": time.time(),
            "stop_job_id": self.ident.job_id,
            "exit_code": d.exit_code,
        }


def preempt_over(grace: float | None, save: float | None) -> dict[str, Any]:
    """`save_over_grace` when a preempted stop's longest save outlasts the GraceTime."""
    if not grace or not save or save <= grace:
        return {}
    return {"save_over_grace": f"a save takes {save:.1f}s, longer than GraceTime {grace:g}s"}


def _resume_fields() -> dict[str, Any]:
    """What rtool.shim.latest_checkpoint resumed from and set aside in this process."""
    resume = last_resume()
    return resume.heartbeat_fields() if resume is not None else {}


def error_info(exc: BaseException, tb: TracebackType | None = None) -> ErrorInfo:
    """ErrorInfo of an exception: type, message (first 500 chars), innermost frame."""
    frames = traceback.extract_tb(tb if tb is not None else exc.__traceback__)
    last = ""
    if frames:
        f = frames[-1]
        last = f'File "{f.filename}", line {f.lineno}, in {f.name}'
    return ErrorInfo(type(exc).__name__, str(exc)[:500], last)


class CrashHooks:
    """`on_crash(info, main_thread, traceback)` runs for an exception nobody caught."""

    def __init__(self, on_crash: Callable[[ErrorInfo, bool, TracebackType | None], None]) -> None:
        self._on_crash = on_crash
        self._prev_sys = sys.excepthook
        self._prev_thread = threading.excepthook
        sys.excepthook = self._sys_hook
        threading.excepthook = self._thread_hook

    def _sys_hook(
        self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(Exception):
            self._on_crash(error_info(exc, tb), True, tb)
        self._prev_sys(kind, exc, tb)

    def _thread_hook(self, args: Any) -> None:
        if args.exc_value is not None and not isinstance(args.exc_value, SystemExit):
            with contextlib.suppress(Exception):
                info = error_info(args.exc_value, args.exc_traceback)
                self._on_crash(info, False, args.exc_traceback)
        self._prev_thread(args)

    def restore(self) -> None:
        if sys.excepthook == self._sys_hook:
            sys.excepthook = self._prev_sys
        if threading.excepthook == self._thread_hook:
            threading.excepthook = self._prev_thread
