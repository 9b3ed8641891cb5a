"""The Guard: the in-loop object a training loop drives (usage: the `rtool.shim` docstring).

`save(step)` is called with the step just completed, on EVERY rank (resume at step + 1).
`guard.step()` costs ~0.1 µs: it stores the step and reads one flag. Files, memory and the clock
are polled by a daemon thread (monitor.py, every `poll_interval`); signal handlers only set a
flag. With `exit=False` (the framework adapters) the guard never raises SystemExit: the caller
stops its loop on `Decision.stopping` and ends with `sys.exit(guard.exit_code)`.

REQUEUE: the shim never runs `scontrol requeue` itself; it exits REQUEUE_EXIT_CODE (85) and the
batch script requeues (docs/shim.md: the environment, exit codes and the heartbeat).

The parts are made in one place (`build`), in the order they need each other; each gets what it
reads and writes as constructor arguments, and what several share are the records of state.py.
The training thread drives the stopper (guard.step), the monitor thread polls the files, the
memory and the deadline and runs the watch's round, the signal handlers note signals.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rtool.core.heartbeat import RunState
from rtool.shim.deadline import Deadline
from rtool.shim.distributed import detect
from rtool.shim.hang import HangWatch
from rtool.shim.heartbeat_writer import JobIdentity
from rtool.shim.monitor import Monitor
from rtool.shim.options import GuardOptions, ShimConfigError
from rtool.shim.report import CrashHooks, Reporter, error_info
from rtool.shim.signals import SignalFlags
from rtool.shim.state import CONTINUE, KILLED, Decision, Loop, MonitorConfig, Sources, Timing
from rtool.shim.stopping import Stopper
from rtool.shim.switchfile import switch_set
from rtool.shim.watch import InProcessWatch

__all__ = ["Guard"]

log = logging.getLogger("rtool.shim")

_NEVER = 1 << 62
_UNDETECTED: Any = object()


@dataclass(frozen=True)
class Parts:
    """One Guard's collaborators."""

    loop: Loop
    sources: Sources
    timing: Timing
    config: MonitorConfig
    report: Reporter
    stopper: Stopper
    deadline: Deadline
    signals: SignalFlags
    watch: InProcessWatch
    monitor: Monitor
    crash: CrashHooks


def build(opts: GuardOptions, ident: JobIdentity, save: Callable[[int], object] | None) -> Parts:
    """The parts, the signal handlers and crash hooks installed (the thread not started)."""
    loop, src, timing = Loop(ident.rank), Sources(), Timing()
    config = MonitorConfig.from_options(opts, None if opts.end_time is not None else ident.job_id)
    report = Reporter(opts.heartbeat, ident, timing, loop)
    report.carry_previous()
    stopper = Stopper(opts, save, src, timing, loop, report)
    deadline = Deadline(config, src, timing, loop)
    hang = HangWatch(opts.hang_after, opts.abort_file, ident.launch, timing)
    # a deadline signal defers the stop only where the job's end can be known (asked, or given)
    ends = opts.deadline_signals if config.job_id or config.end_time is not None else ()
    signals = SignalFlags(opts.signals, ends, src, loop)
    watch = InProcessWatch(config, src, timing, loop, signals, hang, report)
    monitor = Monitor(config, src, timing, loop, deadline, report, watch)
    report.write(RunState.STARTING)
    crash = CrashHooks(watch.crashed)
    return Parts(
        loop, src, timing, config, report, stopper, deadline, signals, watch, monitor, crash
    )


class Guard:
    """The in-loop guard. `Guard(save, GuardOptions(...))` or `Guard(save, **keywords)`."""

    __slots__ = (
        "_agreement",
        "_closed",
        "_countdown",
        "_decision",
        "_finished",
        "_loop",
        "_p",
        "ident",
        "options",
    )

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
        self.options = options
        self.ident = JobIdentity.from_env(options.job_id)
        self._countdown = 1  # steps until the slow path; the first detects torch.distributed
        self._decision, self._agreement = CONTINUE, _UNDETECTED
        self._closed = self._finished = False
        self._p = parts = build(options, self.ident, save)
        self._loop = parts.loop  # the step path's
        if start:
            parts.monitor.start()

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

    @property
    def rank(self) -> int:
        """This process's rank (torch.distributed's once it was detected at the first step)."""
        return self._loop.rank

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
        self._settle(self._p.stopper.stopped(self._loop.step, KILLED, 0, False, False))
        self.close()
        return True

    def step(self, step: int) -> Decision:
        """Call after each completed step. Cheap unless something happened."""
        loop = self._loop
        loop.step = step
        left = self._countdown = self._countdown - 1
        if loop.alert or left <= 0:
            return self._slow(step)
        return self._decision

    def alive(self) -> None:
        """Progress that is no training step (an evaluation batch): no hang; a save is over."""
        self._loop.alive += 1
        self._p.timing.saving_since = None

    def save_started(self) -> None:
        """A framework's own save begins (`mark_saved` ends it): no hang meanwhile."""
        if self._p.timing.saving_since is None:
            self._p.timing.saving_since = time.monotonic()

    def check_loss(self, loss: Any) -> bool:
        """False for a non-finite loss (skip the optimizer step); stops after max_nonfinite."""
        value = float(loss)
        t = self._p.timing
        if math.isfinite(value):
            t.nonfinite = 0
            return True
        t.nonfinite += 1
        log.warning("rtool.shim: non-finite loss %r (%d in a row)", value, t.nonfinite)
        if t.nonfinite >= self.options.max_nonfinite:
            self._p.sources.nonfinite = True
            self._loop.alert = True
        return False

    def mark_saved(self, step: int | None = None, seconds: float | None = None) -> None:
        """With save=None (frameworks): the caller's save asked for by a decision returned."""
        self._p.stopper.mark_saved(self._loop.step if step is None else step, seconds)

    def finished(self, step: int | None = None) -> None:
        """Training complete: heartbeat `finished`, done marker, cancel pending array tasks."""
        if self._finished:
            return
        self._finished = True
        self._p.stopper.finish(self._loop.step if step is None else step)
        self.close()

    def close(self) -> None:
        """Stop the thread, restore the signal handlers and hooks (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._p.stopper.forced.disarm()
        self._p.monitor.stop()
        self._p.signals.restore()
        self._p.crash.restore()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None and not isinstance(exc, SystemExit):
            self._p.watch.crashed(error_info(exc), True, exc.__traceback__)
        self.close()

    @property
    def stopping(self) -> Decision | None:
        """The stop decision once one was taken, else None."""
        return self._p.stopper.final

    @property
    def last_saved_step(self) -> int | None:
        """The step of the last save this guard knows of (this run's, or the previous run's)."""
        return self._p.timing.last_save_step

    @property
    def exit_code(self) -> int:
        """The code to end the process with: the stop's, or 0 (`sys.exit(guard.exit_code)`)."""
        final = self._p.stopper.final
        return final.exit_code or 0 if final is not None else 0

    def reinstall_signal_handlers(self) -> None:
        """Take the signals back from a framework that installed its own (main thread)."""
        self._p.signals.reinstall()

    # -- the slow path -----------------------------------------------------------------------

    def _slow(self, step: int) -> Decision:
        t = self._p.timing
        if t.first_step is None:
            t.first_step, t.first_step_time = step, time.time()
        if self._p.stopper.final is not None:
            return self._p.stopper.final
        if self._agreement is _UNDETECTED:
            self._agreement = detect(self.options, self._loop, self._p.report, self._p.config)
        # near the stop time every step reads the clock (and the ranks agree at every step)
        near = self._p.sources.deadline_at is not None and self._p.sources.time_up is None
        if near:
            self._p.deadline.at_boundary(time.time())
        agreement = self._agreement
        if agreement is None:
            self._countdown = 1 if near else _NEVER
            return self._act(step, self._collect())
        if self._countdown > 0:
            return CONTINUE
        flags, self._countdown = agreement.agree(self._collect(), urgent=near)
        self._p.report.agreed(agreement.slowest())
        return self._act(step, flags)

    def _collect(self) -> int:
        self._loop.alert = False  # before reading: a finding made meanwhile sets it again
        return self._p.sources.flags()

    def _act(self, step: int, flags: int) -> Decision:
        d = self._p.stopper.act(step, flags)
        if d.stopping:
            self._settle(d)
            if self.options.exit:
                self.close()
                raise SystemExit(d.exit_code)
        return d

    def _settle(self, d: Decision) -> None:
        self._p.watch.settle()
        self._decision = d
        self._countdown = _NEVER
