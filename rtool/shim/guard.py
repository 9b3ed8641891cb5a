"""The Guard: the in-loop object a training loop drives (usage: the `rtool.shim` docstring).

`save(step)` is called with the step just completed, on EVERY rank (resume at step + 1).
`guard.step()` costs ~0.1 µs: it stores the step and reads one flag. Files, memory and the clock
are polled by a daemon thread (monitor.py, every `poll_interval`); signal handlers only set a
flag. With `exit=False` (the framework adapters) the guard never raises SystemExit: the caller
stops its loop on `Decision.stopping` and ends with `sys.exit(guard.exit_code)`.

REQUEUE: the shim never runs `scontrol requeue` itself; it exits REQUEUE_EXIT_CODE (85) and the
batch script requeues. The scontrol/scancel calls (EndTime, hold, cancel) live in
rtool.shim.slurm with their own timeout: the documented exception to rtool.core.proc. See
docs/shim.md for the environment, exit codes and the heartbeat.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Callable, Mapping
from typing import Any

from rtool.shim import slurm as shim_slurm
from rtool.shim.crash import error_info
from rtool.shim.decision import (
    CONTINUE,
    KILLED,
    Decision,
)
from rtool.shim.distributed import Agreement, initialised_dist
from rtool.shim.forced_exit import Unresponsive
from rtool.shim.hang import HangWatch
from rtool.shim.heartbeat_writer import JobIdentity
from rtool.shim.monitor import Monitor, MonitorConfig, Sources, Timing
from rtool.shim.options import GuardOptions, ShimConfigError
from rtool.shim.report import Reporter
from rtool.shim.signals import SignalFlags
from rtool.shim.stopping import Stopper
from rtool.shim.switchfile import switch_set
from rtool.shim.watch import InProcessWatch

__all__ = ["Guard"]

log = logging.getLogger("rtool.shim")

_NEVER = 1 << 62
_UNDETECTED: Any = object()


class Guard(InProcessWatch):
    """The in-loop guard. `Guard(save, GuardOptions(...))` or `Guard(save, **keywords)`."""

    def __init__(
        self,
        save: Callable[[int], object] | None = None,
        options: GuardOptions | None = None,
        *,
        start: bool = True,
        **keywords: Any,
    ) -> None:
        if options is None:
            options = GuardOptions.parse(**keywords)
        elif keywords:
            raise ShimConfigError("rtool.shim: pass options= or keywords, not both")
        self.options = opts = options
        self.ident = JobIdentity.from_env(opts.job_id)
        self.rank = self.ident.rank
        # the step path reads these four
        self._step: int | None = None
        self._alert = False
        self._countdown = 1  # the first step detects torch.distributed
        self._decision = CONTINUE
        self._agreement: Any = _UNDETECTED
        self._interval = 1
        self._closed = self._finished = False
        self._alive = 0  # bumped by alive(): progress that is not a step (evaluation)
        self._src, self._timing = Sources(), Timing()
        self._report = Reporter(opts.heartbeat, self.ident, self._timing)
        self._report.carry_previous()
        self._stopper = Stopper(opts, save, self._src, self._timing, self._report)
        self._stopper.on_stop = self._stop_begun
        self._monitor = Monitor(self._monitor_config(), self._src, self._timing, self._wake)
        self._monitor.current_step = lambda: self._step
        self._monitor.on_progress = self._report.progress
        self._report.last_step = lambda: self._step  # live: the monitor's copy lags
        self._report.progress_time = lambda: self._monitor.progress_time
        self._signals = SignalFlags(opts.signals, self._on_signal)
        self._unresponsive = Unresponsive(self._unresponsive_bound, self._on_unresponsive)
        self._hang = HangWatch(opts.hang_after, opts.abort_file, self.ident.launch, self._timing)
        self._hang.fire, self._hang.peer = self._on_hang, self._on_peer
        self._monitor.watchers.append(self._watch)
        self._report.start(self._on_crash)
        if start:
            self._monitor.start()

    @classmethod
    def from_env(
        cls,
        save: Callable[[int], object] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        start: bool = True,
        **overrides: Any,
    ) -> Guard:
        """A Guard configured by the RTOOL_* variables; keyword arguments win over them."""
        return cls(save, GuardOptions.from_env(environ, **overrides), start=start)

    def _monitor_config(self) -> MonitorConfig:
        o = self.options
        return MonitorConfig.from_options(o, None if o.end_time is not None else self.ident.job_id)

    def _on_signal(self, name: str) -> None:
        """In the signal handler: note it; the deadline kind goes to the monitor thread."""
        sig = signal.Signals[name]
        if sig == signal.SIGTERM:
            self._unresponsive.noted(time.monotonic())
        if sig in self.options.deadline_signals and self._monitor.knows_end_time:
            if self._src.deadline_signal is None:
                self._src.deadline_signal = name
            return
        if self._src.signal is None:
            self._src.signal = name
        self._alert = True

    def _wake(self) -> None:
        self._alert = True

    # -- the loop API ------------------------------------------------------------------------

    @property
    def killed(self) -> bool:
        """The kill switch is set, by you or root (checked now; another user's is ignored)."""
        return switch_set(self.options.kill_switch, "kill")

    def exit_if_killed(self) -> None:
        """Exit 0 at once when the kill switch exists (call at the top of main)."""
        if self.stop_if_killed():
            raise SystemExit(0)

    def stop_if_killed(self) -> bool:
        """The kill switch exists: record the stop (nothing saved), close, True. Frameworks
        then end their run normally (no SystemExit inside their start hooks)."""
        if not self.killed:
            return False
        self._settle(self._stopper.stopped(self._step, KILLED, 0, False, save_requested=False))
        self.close()
        return True

    def step(self, step: int) -> Decision:
        """Call after each completed step. Cheap unless something happened."""
        self._step = step
        self._countdown -= 1
        if self._alert or self._countdown <= 0:
            return self._slow(step)
        return self._decision

    def alive(self) -> None:
        """Progress that is no training step (an evaluation batch): no hang; a save is over."""
        self._alive += 1
        self._timing.saving_since = None

    def save_started(self) -> None:
        """A framework's own save begins (`mark_saved` ends it): no hang meanwhile."""
        if self._timing.saving_since is None:
            self._timing.saving_since = time.monotonic()

    def check_loss(self, loss: Any) -> bool:
        """False for a non-finite loss (skip the optimizer step); stops after max_nonfinite."""
        value = float(loss)
        t = self._timing
        if math.isfinite(value):
            t.nonfinite = 0
            return True
        t.nonfinite += 1
        log.warning("rtool.shim: non-finite loss %r (%d in a row)", value, t.nonfinite)
        if t.nonfinite >= self.options.max_nonfinite:
            self._src.nonfinite = True
            self._alert = True
        return False

    def mark_saved(self, step: int | None = None, seconds: float | None = None) -> None:
        """With save=None (frameworks): the caller's save asked for by a decision returned."""
        self._stopper.mark_saved(self._step if step is None else step, seconds)

    def finished(self, step: int | None = None) -> None:
        """Training complete: heartbeat `finished`, done marker, cancel pending array tasks."""
        if self._finished:
            return
        self._finished = True
        final = self._stopper.final
        if final is not None:  # stopped early (exit=False): not finished, cancel nothing
            log.warning("rtool.shim: finished() after a stop (%s) ignored", final.reason)
            self.close()
            return
        step = self._step if step is None else step
        self._report.finished(step)
        if self.rank == 0 and self.ident.array_job_id:
            shim_slurm.cancel_pending(self.ident.array_job_id)
        log.info("rtool.shim: training finished at step %s", step)
        self.close()

    def close(self) -> None:
        """Stop the thread, restore the signal handlers and hooks (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stopper.forced.disarm()
        self._monitor.stop()
        self._signals.restore()
        self._report.close()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None and not isinstance(exc, SystemExit):
            self._report.crashed(error_info(exc), True)
        self.close()

    @property
    def stopping(self) -> Decision | None:
        """The stop decision once one was taken, else None."""
        return self._stopper.final

    @property
    def last_saved_step(self) -> int | None:
        """The step of the last save this guard knows of (this run's, or the previous run's)."""
        return self._timing.last_save_step

    @property
    def exit_code(self) -> int:
        """The code to end the process with: the stop's, or 0 (`sys.exit(guard.exit_code)`)."""
        final = self._stopper.final
        return final.exit_code or 0 if final is not None else 0

    def reinstall_signal_handlers(self) -> None:
        """Take the signals back from a framework that installed its own (main thread)."""
        self._signals.reinstall()

    # -- the slow path -----------------------------------------------------------------------

    def _slow(self, step: int) -> Decision:
        if self._timing.first_step is None:
            self._timing.first_step, self._timing.first_step_time = step, time.time()
        if self._stopper.final is not None:
            return self._stopper.final
        if self._agreement is _UNDETECTED:
            self._detect()
        # near the stop time every step reads the clock (and the ranks agree at every step)
        near = self._src.deadline_at is not None and self._src.time_up is None
        if near:
            self._monitor.deadline.at_boundary(time.time())
        agreement = self._agreement
        if agreement is None:
            self._countdown = 1 if near else _NEVER
            return self._act(step, self._collect())
        if self._countdown > 0:
            return CONTINUE
        flags, self._interval = agreement.agree(self._collect(), self._interval, urgent=near)
        self._report.straggler = agreement.slowest()
        self._countdown = self._interval
        return self._act(step, flags)

    def _detect(self) -> None:
        dist = initialised_dist() if self.options.distributed is not False else None
        if dist is None:
            if self.options.distributed:
                raise ShimConfigError(
                    "rtool.shim: distributed=True but torch.distributed is not initialised"
                )
            self._agreement = None
            return
        agreement = self._agreement = Agreement(
            dist, self.options.sync_every, self.options.sync_seconds
        )
        self.rank = self._stopper.rank = agreement.rank
        self._report.set_rank(agreement.rank, agreement.world)
        if self.options.sync_every is None:
            self._monitor.config.extra_latency = self.options.sync_seconds
        self._countdown = 0

    def _collect(self) -> int:
        self._alert = False  # before reading: a finding made meanwhile sets it again
        return self._src.flags()

    def _act(self, step: int, flags: int) -> Decision:
        d = self._stopper.act(step, flags)
        if d.stopping:
            self._settle(d)
            if self.options.exit:
                self.close()
                raise SystemExit(d.exit_code)
        return d

    def _settle(self, d: Decision) -> None:
        self._unresponsive.settled = self._hang.settled = True
        self._decision = d
        self._countdown = _NEVER
