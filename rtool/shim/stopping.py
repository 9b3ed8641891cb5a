"""What the guard does once the ranks agreed on the flags: save on the switch, stop, hold.

`Stopper.act(step, flags)` runs in the training thread at a step boundary. A stop saves
(through `save(step)`, or asks the caller to with save=None), writes the heartbeat and returns
the final Decision; the Guard exits with its code unless exit=False.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from rtool.core.heartbeat import RunState
from rtool.shim import slurm as shim_slurm
from rtool.shim.hang import ForcedExit
from rtool.shim.heartbeat_writer import JobIdentity
from rtool.shim.options import GuardOptions
from rtool.shim.report import Reporter
from rtool.shim.state import (
    CONTINUE,
    F_GPU,
    F_KILL,
    F_MEMORY,
    F_NONFINITE,
    F_PERIODIC,
    F_SAVE,
    F_SIGNAL,
    F_TIME,
    GPU_MEMORY,
    KILLED,
    MEMORY,
    NONFINITE,
    NONFINITE_EXIT_CODE,
    PERIODIC,
    PREEMPTED,
    SAVE_FAILED_EXIT_CODE,
    SAVE_SWITCH,
    SAVE_TIMEOUT,
    SAVE_TIMEOUT_EXIT_CODE,
    SIGNAL,
    TIME_LIMIT,
    Decision,
    Loop,
    Sources,
    Timing,
)
from rtool.shim.switchfile import remove_save, take_save

log = logging.getLogger("rtool.shim")

_STOPS: tuple[tuple[int, str], ...] = (
    (F_KILL, KILLED),
    (F_SIGNAL, SIGNAL),
    (F_TIME, TIME_LIMIT),
    (F_MEMORY, MEMORY),
    (F_GPU, GPU_MEMORY),
)


class Stopper:
    """Saves and stops for one Guard; `final` is the stop decision once taken."""

    def __init__(
        self,
        opts: GuardOptions,
        save: Callable[[int], object] | None,
        src: Sources,
        timing: Timing,
        loop: Loop,
        report: Reporter,
    ) -> None:
        self.opts, self.save, self.src, self.timing = opts, save, src, timing
        self.loop, self.report = loop, report
        self.final: Decision | None = None
        self.switch_pending: tuple[int, int] | None = None  # framework mode: save asked for
        self._stopping_at: tuple[int | None, str] = (None, "")
        self.forced = ForcedExit(opts.save_timeout, SAVE_TIMEOUT_EXIT_CODE, self._on_forced_exit)
        self.preempted: shim_slurm.Preemption | None = None

    def act(self, step: int, flags: int) -> Decision:
        if flags & F_NONFINITE:
            return self.stop_nonfinite(step)
        for bit, reason in _STOPS:
            if flags & bit:
                return self.stop(step, reason)
        if flags & F_SAVE:
            self.src.periodic = False  # the switch's save is the cadence's too
            return self.save_on_switch(step)
        if flags & F_PERIODIC:
            return self.save_periodic(step)
        return CONTINUE

    def save_periodic(self, step: int) -> Decision:
        """A save of the save_every cadence (on every rank, at the same step); training goes on."""
        self.src.periodic = False
        if self.save is None:  # the caller saves, then calls mark_saved()
            self.timing.saving_since = time.monotonic()
            return Decision(save_requested=True, reason=PERIODIC, step=step)
        return Decision(saved=self.do_save(step), save_requested=True, reason=PERIODIC, step=step)

    def do_save(self, step: int) -> bool:
        assert self.save is not None
        t0 = self.timing.saving_since = time.monotonic()
        try:
            self.save(step)
        except Exception:
            log.exception("rtool.shim: SAVE FAILED at step %d", step)
            self.timing.saves += 1
            return False
        finally:
            self.timing.saving_since = None
        self.timing.saved(step, time.monotonic() - t0)
        if self.final is None:
            self.report.write()
        return True

    def mark_saved(self, step: int | None, seconds: float | None) -> None:
        """The caller's save (framework mode) returned."""
        self.forced.disarm()
        self.timing.saving_since = None
        self.timing.saved(step, seconds)
        if self.final is not None:  # the stop's save, made by the caller after the decision
            self.report.stopped(self.final)
        else:
            self.report.write()
        if self.switch_pending is not None:
            ident, self.switch_pending = self.switch_pending, None
            self._remove_switch(ident, step)

    def save_on_switch(self, step: int) -> Decision:
        ident = take_save(self.opts.save_switch, self.src)
        if self.save is None:  # the caller saves, then calls mark_saved()
            self.switch_pending = ident
            self.timing.saving_since = time.monotonic()
            return Decision(save_requested=True, reason=SAVE_SWITCH, step=step)
        ok = self.do_save(step)
        if ok:
            self._remove_switch(ident, step)
        else:
            log.error(
                "rtool.shim: save requested by %s FAILED; the file stays: touch it to retry",
                self.opts.save_switch,
            )
        return Decision(saved=ok, save_requested=True, reason=SAVE_SWITCH, step=step)

    def _remove_switch(self, ident: tuple[int, int] | None, step: int | None) -> None:
        if self.loop.rank == 0:
            remove_save(self.opts.save_switch, ident, self.src, step)

    def stop(self, step: int, reason: str) -> Decision:
        self.loop.stopping = True  # a safe point: the save timeout bounds the rest
        job = self.report.ident.job_id
        if reason == SIGNAL and job:
            self.preempted = shim_slurm.preemption(job, self.report.ident.restart_count)
            if self.preempted is not None:
                reason = PREEMPTED
                self.report.grace = self.preempted.grace
                self.forced.timeout = self.preempted.save_bound(
                    self.opts.save_timeout, self.timing.longest_save
                )
        code = stop_code(self.opts, self.report.ident, reason)
        saved = False
        self._stopping_at = (step, reason)
        self.forced.arm()
        if self.save is not None:
            self.report.write(RunState.SAVING, step)
            saved = self.do_save(step)
            self.forced.disarm()
            if not saved:
                code = SAVE_FAILED_EXIT_CODE
        if self.src.save_ident is not None:
            ident = take_save(self.opts.save_switch, self.src)
            if saved:
                self._remove_switch(ident, step)
            elif self.save is None:
                self.switch_pending = ident
        return self.stopped(step, reason, code, saved, save_requested=True)

    def stop_nonfinite(self, step: int) -> Decision:
        log.error(
            "rtool.shim: %d non-finite losses in a row: stopping at step %d WITHOUT saving "
            "(the last good checkpoint stays)",
            self.opts.max_nonfinite,
            step,
        )
        array = self.report.ident.array_job_id
        if self.loop.rank == 0 and array and shim_slurm.hold_pending(array):
            log.error(
                "rtool.shim: the pending tasks of array %s are held; after a look, release them "
                "with: scontrol release %s",
                array,
                array,
            )
        return self.stopped(step, NONFINITE, NONFINITE_EXIT_CODE, False, save_requested=False)

    def stopped(
        self, step: int | None, reason: str, code: int, saved: bool, save_requested: bool
    ) -> Decision:
        detail = self._detail(reason)
        d = Decision(saved, True, reason, save_requested, code, step, detail)
        self.final = d
        self.report.stopped(d)
        asked = self.save is None and save_requested
        what = "saved" if saved else "save requested" if asked else "not saved"
        log.warning(
            "rtool.shim: stopping at step %s: %s (%s); %s; exit code %d",
            step,
            reason,
            detail,
            what,
            code,
        )
        return d

    def finish(self, step: int | None) -> None:
        """Training complete: heartbeat `finished`, done marker, cancel pending array tasks
        (after a stop with exit=False the run is not finished: nothing is done)."""
        if self.final is not None:
            log.warning("rtool.shim: finished() after a stop (%s) ignored", self.final.reason)
            return
        self.report.finished(step)
        array = self.report.ident.array_job_id
        if self.loop.rank == 0 and array:
            shim_slurm.cancel_pending(array)
        log.info("rtool.shim: training finished at step %s", step)

    def _on_forced_exit(self) -> None:
        step, reason = self._stopping_at
        log.critical(
            "rtool.shim: the save at step %s (stopping: %s) did not return within %gs: "
            "exiting with %d without it",
            step,
            reason,
            self.forced.timeout,
            SAVE_TIMEOUT_EXIT_CODE,
        )
        detail = f"while stopping: {reason}"
        self.report.stopped(
            Decision(False, True, SAVE_TIMEOUT, True, SAVE_TIMEOUT_EXIT_CODE, step, detail)
        )

    def _detail(self, reason: str) -> str:
        """What this rank saw of `reason`."""
        s, preempted = self.src, self.preempted
        local = {
            KILLED: s.kill and f"kill switch {self.opts.kill_switch}",
            SIGNAL: s.signal,
            PREEMPTED: preempted and preempted.detail(s.signal),
            TIME_LIMIT: s.time_up,
            MEMORY: s.memory,
            GPU_MEMORY: s.gpu,
            NONFINITE: f"{self.timing.nonfinite} in a row",
        }.get(reason)
        return str(local) if local else "seen on another rank"


def stop_code(opts: GuardOptions, ident: JobIdentity, reason: str) -> int:
    """The exit code of a stop for `reason`: REQUEUE while requeues are asked for and left."""
    if reason == KILLED or not opts.auto_requeue:
        return 0
    restarts = ident.restart_count
    if opts.max_requeues is None or restarts < opts.max_requeues:
        return opts.requeue_exit_code
    log.warning(
        "rtool.shim: %d requeues done (max %d): not asking for another", restarts, opts.max_requeues
    )
    return 0
