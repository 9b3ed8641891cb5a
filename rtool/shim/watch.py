"""What the monitor thread watches inside the training process on behalf of the Guard: a
TERM the training thread never acts on (forced_exit.Unresponsive), a hang, another rank's
failure (hang.HangWatch). Each ends the process with its stacks dumped and its heartbeat
saying why. A base class of `Guard` (rtool/shim/guard.py), kept apart for its size."""

from __future__ import annotations

import math
import signal
from typing import TYPE_CHECKING

from rtool.core.heartbeat import ErrorInfo
from rtool.shim.decision import HANG_EXIT_CODE, HUNG, PEER_FAILED, SIGNAL
from rtool.shim.forced_exit import Unresponsive
from rtool.shim.hang import Abort, dump_stacks, end

if TYPE_CHECKING:
    from rtool.shim.hang import HangWatch
    from rtool.shim.monitor import Monitor, Timing
    from rtool.shim.options import GuardOptions
    from rtool.shim.signals import SignalFlags
    from rtool.shim.stopping import Stopper


class InProcessWatch:
    """The Guard's watch rounds and what ends the process (the monitor thread runs them)."""

    options: GuardOptions
    rank: int
    _step: int | None
    _alive: int
    _timing: Timing
    _monitor: Monitor
    _stopper: Stopper
    _signals: SignalFlags
    _unresponsive: Unresponsive
    _hang: HangWatch

    # -- unresponsive after TERM -------------------------------------------------------------

    def _watch(self, mono: float) -> None:
        """One round of the monitor thread: TERM seen by the wakeup fd, the bound passed."""
        if signal.SIGTERM in self._signals.drain_wakeup():
            self._unresponsive.noted(mono)
        self._unresponsive.check(mono)
        self._hang.check(mono, self._step, self._alive)

    def _stop_begun(self) -> None:
        """A stop reached its safe point: its save is bounded by save_timeout (and the grace
        of a preemption), no longer by the unresponsive timer."""
        self._unresponsive.settled = True

    def _unresponsive_bound(self) -> float:
        after = self.options.unresponsive_after
        if after is None:
            return math.inf
        if isinstance(after, (int, float)):
            return float(after)
        t, c = self._timing, self._monitor.config
        need = 2 * t.longest_step + t.longest_save + c.poll_interval + c.extra_latency
        return max(Unresponsive.MIN_BOUND, need)

    def _on_unresponsive(self, waited: float) -> None:
        self._stopper.unresponsive(waited, self._monitor.last_step)
        self._unresponsive.end(self._stopper.stop_code(SIGNAL))

    # -- hung, or another rank failed (the monitor thread) -----------------------------------

    def _on_hang(self, idle: float) -> None:
        bound = self._hang.threshold() or idle
        detail = f"no step for {idle:.1f}s after step {self._step} (hang_after {bound:g}s)"
        self._hang.abort(self.rank, "hung", detail)
        self._end_hung(HUNG, detail)

    def _on_peer(self, abort: Abort) -> None:
        self._end_hung(PEER_FAILED, f"{abort.text()}; this rank ended with it")

    def _end_hung(self, reason: str, detail: str) -> None:
        self._unresponsive.settled = True
        dump_stacks(
            f"{reason.upper()} at step {self._step}: {detail}", *self._hang.stack_file(self.rank)
        )
        self._stopper.hung(reason, detail, self._step)
        end(HANG_EXIT_CODE)

    def _on_crash(self, info: ErrorInfo, main_thread: bool) -> None:
        """The training died of an exception: the other ranks of this launch end at once."""
        if main_thread:
            self._hang.abort(self.rank, "crashed", str(info))
