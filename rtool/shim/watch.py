"""What the monitor thread watches inside the training process besides files and the clock:
a TERM the training thread never acts on (unresponsive), a hang or another rank's failure
(hang.HangWatch), and a crash (the other ranks are told). Each ends the process with its
stacks dumped and its heartbeat saying why."""

from __future__ import annotations

import logging
import math
import signal
from types import TracebackType

from rtool.core.heartbeat import ErrorInfo
from rtool.shim.hang import Abort, HangWatch, crash_reason, dump_stacks, end_dumped
from rtool.shim.report import Reporter
from rtool.shim.signals import SignalFlags
from rtool.shim.state import (
    HANG_EXIT_CODE,
    HUNG,
    PEER_FAILED,
    SIGNAL,
    UNRESPONSIVE,
    Decision,
    Loop,
    MonitorConfig,
    Sources,
    Timing,
)
from rtool.shim.stopping import stop_code

log = logging.getLogger("rtool.shim")

#: Least bound (seconds) after SIGTERM of `unresponsive_after = "auto"`: a process with no
#: step measured yet gets this long.
MIN_BOUND = 5.0


class InProcessWatch:
    """One `round(mono)` per poll of the monitor thread; `settle()` once a stop was decided."""

    def __init__(
        self,
        config: MonitorConfig,
        sources: Sources,
        timing: Timing,
        loop: Loop,
        signals: SignalFlags,
        hang: HangWatch,
        report: Reporter,
    ) -> None:
        self.opts, self.config = config.opts, config
        self.sources, self.timing, self.loop = sources, timing, loop
        self.signals, self.hang, self.report = signals, hang, report
        self.settled = False  # a stop was decided, or the process is being ended
        self.blamed_peer = False  # a crash was recorded as another rank's failure

    def round(self, mono: float) -> None:
        s = self.sources
        if signal.SIGTERM in self.signals.drain_wakeup() and s.term_at is None:
            s.term_at = mono  # a TERM the main thread has not run its handler for
        self._check_unresponsive(mono)
        found = self.hang.check(mono, self.loop.step, self.loop.alive)
        if isinstance(found, Abort):
            self._end_hung(PEER_FAILED, f"{found.text()}; this rank ended with it")
        elif found is not None:
            self.on_hang(found)

    def settle(self) -> None:
        self.settled = self.hang.settled = True

    # -- unresponsive after TERM -------------------------------------------------------------

    def bound(self) -> float:
        """Seconds after SIGTERM within which the training thread must reach a safe point."""
        after = self.opts.unresponsive_after
        if after is None:
            return math.inf
        if isinstance(after, (int, float)):
            return float(after)
        t, c = self.timing, self.config
        need = 2 * t.longest_step + t.longest_save + c.opts.poll_interval + c.extra_latency
        return max(MIN_BOUND, need)

    def _check_unresponsive(self, mono: float) -> None:
        """No safe point after SIGTERM (a stop bounds its own save): record why, end now, so
        that a requeue or the next job does not wait for Slurm's KillWait."""
        at = self.sources.term_at
        if at is None or self.settled or self.loop.stopping or mono - at < self.bound():
            return
        self.settled = True
        code = stop_code(self.opts, self.report.ident, SIGNAL)
        detail = (
            f"no safe point within {mono - at:.1f}s of SIGTERM (longest step "
            f"{self.timing.longest_step:.2f}s): process ended so the requeue takes effect"
        )
        log.critical("rtool.shim: %s; exit code %d", detail, code)
        step = self.timing.seen_step
        self.report.stopped(Decision(False, True, UNRESPONSIVE, False, code, step, detail))
        end_dumped(code)

    # -- hung, or another rank failed --------------------------------------------------------

    def on_hang(self, idle: float) -> None:
        bound = self.hang.threshold() or idle
        detail = f"no step for {idle:.1f}s after step {self.loop.step} (hang_after {bound:g}s)"
        self.hang.abort(self.loop.rank, "hung", detail)
        self._end_hung(HUNG, detail)

    def _end_hung(self, reason: str, detail: str) -> None:
        """Hung (or another rank failed): the stacks, why in the heartbeat (nothing saved)."""
        self.settled = True
        step = self.loop.step
        where = self.hang.stack_file(self.loop.rank)
        dump_stacks(f"{reason.upper()} at step {step}: {detail}", *where)
        log.critical("rtool.shim: %s: %s; exit code %d", reason, detail, HANG_EXIT_CODE)
        d = Decision(False, True, reason, False, HANG_EXIT_CODE, step, detail)
        self.report.stopped(d, at_progress=True)
        end_dumped(HANG_EXIT_CODE, dump=False)

    def crashed(self, info: ErrorInfo, main_thread: bool, tb: TracebackType | None) -> None:
        """An uncaught exception: the training's own ends the other ranks at once (told first),
        then is recorded. One raised after another rank of this launch failed (a collective whose
        peer is gone) is recorded as that rank's failure (peer_failed), with the stack file."""
        if main_thread and self.blamed_peer:
            return  # said once (`with Guard` records, then the exception reaches the hook)
        peer = self.hang.peer() if main_thread and self.report.ours() else None
        if peer is None:
            if main_thread:
                self.hang.abort(self.loop.rank, crash_reason(str(info)), str(info))
            self.report.crashed(info, main_thread)
            return
        self.settle()
        self.blamed_peer = True
        self.hang.trace_to_file(self.loop.rank, tb)
        detail = f"{peer.text()}; this rank crashed after it: {info}"
        log.critical("rtool.shim: %s: %s", PEER_FAILED, detail)
        self.report.stopped(Decision(False, True, PEER_FAILED, False, 1, self.loop.step, detail))
