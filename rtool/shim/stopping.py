"""What the guard does once the ranks agreed on the flags: save on the switch, stop, hold.

`Stopper.act(step, flags)` runs in the training thread at a step boundary. A stop saves
(through `save(step)`, or asks the caller to with save=None), writes the heartbeat and returns
the final Decision; the Guard exits with its code unless exit=False.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable

from rtool.shim import preempt
from rtool.shim import slurm as shim_slurm
from rtool.shim.decision import (
    CONTINUE,
    GPU_MEMORY,
    HANG_EXIT_CODE,
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
    UNRESPONSIVE,
    Decision,
)
from rtool.shim.forced_exit import ForcedExit
from rtool.shim.monitor import (
    F_GPU,
    F_KILL,
    F_MEMORY,
    F_NONFINITE,
    F_PERIODIC,
    F_SAVE,
    F_SIGNAL,
    F_TIME,
    Sources,
    Timing,
    file_ident,
)
from rtool.shim.options import GuardOptions
from rtool.shim.report import Reporter

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
        report: Reporter,
    ) -> None:
        self.opts, self.save, self.src, self.timing, self.report = opts, save, src, timing, report
        self.rank = report.ident.rank
        self.final: Decision | None = None
        self.switch_pending: tuple[int, int] | None = None  # framework mode: save asked for
        self._stopping_at: tuple[int | None, str] = (None, "")
        self.forced = ForcedExit(opts.save_timeout, SAVE_TIMEOUT_EXIT_CODE, self._on_forced_exit)
        #: called when a stop begins (a safe point reached): the unresponsive timer ends there
        self.on_stop: Callable[[], None] | None = None
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

    # -- saves -------------------------------------------------------------------------------

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
            self.report.saved()
        return True

    def mark_saved(self, step: int | None, seconds: float | None) -> None:
        """The caller's save (framework mode) returned."""
        self.forced.disarm()
        self.timing.saving_since = None
        self.timing.saved(step, seconds)
        if self.final is not None:  # the stop's save, made by the caller after the decision
            self.report.stopped(self.final)
        else:
            self.report.saved()
        if self.switch_pending is not None:
            ident, self.switch_pending = self.switch_pending, None
            self.remove_switch(ident, step)

    def save_on_switch(self, step: int) -> Decision:
        ident = self.take_switch()
        if self.save is None:  # the caller saves, then calls mark_saved()
            self.switch_pending = ident
            self.timing.saving_since = time.monotonic()
            return Decision(save_requested=True, reason=SAVE_SWITCH, step=step)
        ok = self.do_save(step)
        if ok:
            self.remove_switch(ident, step)
        else:
            log.error(
                "rtool.shim: save requested by %s FAILED; the file stays: touch it to retry",
                self.opts.save_switch,
            )
        return Decision(saved=ok, save_requested=True, reason=SAVE_SWITCH, step=step)

    def take_switch(self) -> tuple[int, int] | None:
        """Mark the save switch as handled, so the thread does not request it again."""
        s = self.src
        with s.lock:
            ident = s.save_ident
            if ident is None and self.opts.save_switch:
                ident = file_ident(self.opts.save_switch)  # seen on another rank only
            s.save_handled = ident
            s.save_ident = None
        return ident

    def remove_switch(self, ident: tuple[int, int] | None, step: int | None) -> None:
        """After the agreed save returned: rank 0 removes the save switch it saved for."""
        path = self.opts.save_switch
        if path is None or ident is None or self.rank != 0:
            return
        with self.src.lock:
            if file_ident(path) == ident:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        log.info("rtool.shim: saved at step %s on request of %s", step, path)

    # -- stops -------------------------------------------------------------------------------

    def stop(self, step: int, reason: str) -> Decision:
        if self.on_stop is not None:
            self.on_stop()
        job = self.report.ident.job_id
        if reason == SIGNAL and job:
            self.preempted = shim_slurm.preemption(job, self.report.ident.restart_count)
            if self.preempted is not None:
                reason = PREEMPTED
                self.report.grace = self.preempted.grace
                self.forced.timeout = preempt.save_bound(
                    self.preempted, self.opts.save_timeout, self.timing.longest_save
                )
        code = self.stop_code(reason)
        saved = False
        self._stopping_at = (step, reason)
        self.forced.arm()
        if self.save is not None:
            self.report.saving(step)
            saved = self.do_save(step)
            self.forced.disarm()
            if not saved:
                code = SAVE_FAILED_EXIT_CODE
        if self.src.save_ident is not None:
            ident = self.take_switch()
            if saved:
                self.remove_switch(ident, step)
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
        if self.rank == 0 and array and shim_slurm.hold_pending(array):
            log.error(
                "rtool.shim: the pending tasks of array %s are held; after a look, release them "
                "with: scontrol release %s",
                array,
                array,
            )
        return self.stopped(step, NONFINITE, NONFINITE_EXIT_CODE, False, save_requested=False)

    def stop_code(self, reason: str) -> int:
        opts = self.opts
        if reason == KILLED or not opts.auto_requeue:
            return 0
        restarts = self.report.ident.restart_count
        if opts.max_requeues is None or restarts < opts.max_requeues:
            return opts.requeue_exit_code
        log.warning(
            "rtool.shim: %d requeues done (max %d): not asking for another",
            restarts,
            opts.max_requeues,
        )
        return 0

    def stopped(
        self, step: int | None, reason: str, code: int, saved: bool, save_requested: bool
    ) -> Decision:
        nonfinite = f"{self.timing.nonfinite} in a row"
        detail = nonfinite if reason == NONFINITE else self.detail(reason)
        d = Decision(saved, True, reason, save_requested, code, step, detail)
        self.final = d
        self.report.stopped(d)
        if saved:
            what = "saved"
        elif self.save is None and save_requested:
            what = "save requested"
        else:
            what = "not saved"
        log.warning(
            "rtool.shim: stopping at step %s: %s (%s); %s; exit code %d",
            step,
            reason,
            detail,
            what,
            code,
        )
        return d

    def detail(self, reason: str) -> str:
        s = self.src
        local = {
            KILLED: s.kill and f"kill switch {self.opts.kill_switch}",
            SIGNAL: s.signal,
            PREEMPTED: self.preempted and preempt.detail(s.signal, self.preempted),
            TIME_LIMIT: s.time_up,
            MEMORY: s.memory,
            GPU_MEMORY: s.gpu,
        }.get(reason)
        return str(local) if local else "seen on another rank"

    def hung(self, reason: str, detail: str, step: int | None) -> None:
        """Hung (or another rank failed): record why the process is ended now (nothing saved)."""
        log.critical("rtool.shim: %s: %s; exit code %d", reason, detail, HANG_EXIT_CODE)
        d = Decision(False, True, reason, False, HANG_EXIT_CODE, step, detail)
        self.report.stopped(d, at_progress=True)

    def unresponsive(self, waited: float, step: int | None) -> None:
        """No safe point after SIGTERM: record why the process is ended now."""
        code = self.stop_code(SIGNAL)
        detail = (
            f"no safe point within {waited:.1f}s of SIGTERM (longest step "
            f"{self.timing.longest_step:.2f}s): process ended so the requeue takes effect"
        )
        log.critical("rtool.shim: %s; exit code %d", detail, code)
        self.report.stopped(Decision(False, True, UNRESPONSIVE, False, code, step, detail))

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
