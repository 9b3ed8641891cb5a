"""The parts of one Guard, made in one place (`build`), in the order they need each other.

Each part gets what it reads and writes as constructor arguments; what several share are the
plain records of state.py (the loop's step and alert flag, what was found, what was measured).
The training thread drives the stopper (guard.step), the monitor thread polls the files, the
memory and the deadline and runs the watch's round, and the signal handlers note signals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rtool.shim.crash import CrashHooks
from rtool.shim.deadline import Deadline
from rtool.shim.hang import HangWatch
from rtool.shim.heartbeat_writer import JobIdentity
from rtool.shim.monitor import Monitor
from rtool.shim.options import GuardOptions
from rtool.shim.report import Reporter
from rtool.shim.signals import SignalFlags
from rtool.shim.state import Loop, MonitorConfig, Sources, Timing
from rtool.shim.stopping import Stopper
from rtool.shim.watch import InProcessWatch


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
    ends = opts.deadline_signals if deadline.knows_end_time else ()
    signals = SignalFlags(opts.signals, ends, src, loop)
    watch = InProcessWatch(opts, config, src, timing, loop, signals, hang, report)
    monitor = Monitor(config, src, timing, loop, deadline, report, watch)
    report.start()
    crash = CrashHooks(watch.crashed)
    return Parts(
        loop, src, timing, config, report, stopper, deadline, signals, watch, monitor, crash
    )
