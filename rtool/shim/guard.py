"""rtool.shim: the in-loop guard: kill switch, save switch, signals, time limit, memory, NaN.

    from rtool.shim import Guard

    guard = Guard.from_env(save=save_checkpoint)  # reads the RTOOL_* variables below
    guard.exit_if_killed()                        # kill switch present: exit 0 before training
    for step in range(start_step, total_steps):
        loss = train_step()
        if not guard.check_loss(loss):            # non-finite: skip the optimizer step
            continue
        guard.step(step)                          # may call save_checkpoint(step), then exit
    guard.finished()                              # done marker, cancel the array's pending tasks

`save(step)` is called with the step just completed, on EVERY rank (resume at step + 1).
`guard.step()` costs ~0.1 µs: it stores the step and reads one flag. Files, memory and the clock
are polled by a daemon thread (every `poll_interval`, 1 s); signal handlers only set a flag.

Contract with the sbatch templates (environment read by `Guard.from_env`)
---------------------------------------------------------------------------
RTOOL_KILL_SWITCH      absolute path. File appears -> save, exit 0 (an array's next task sees it
                       in exit_if_killed() and exits 0 at once).
RTOOL_SAVE_SWITCH      absolute path. File appears -> save, continue; rank 0 removes the file
                       after the save returned (a failed save leaves it; touch it again to retry).
RTOOL_HEARTBEAT        heartbeat JSON path (optional); `<path>.done` is the done marker.
RTOOL_EXIT_BEFORE_END  "auto" | a duration ("10m") | "off". Deadline = the job's EndTime
                       (scontrol show job $SLURM_JOB_ID) minus that; "auto" = max(60 s,
                       2 x (longest step + longest save) + poll/sync latency).
RTOOL_SIGNALS          "USR1,TERM" (default). Signal -> save and exit at the next step.
RTOOL_MAX_MEMORY_USED  "95%" (or a size, "200GiB") of host memory -> save and exit.
RTOOL_MIN_GPU_FREE     "2GiB": free GPU memory below it -> save and exit (torch, every 30 s).
RTOOL_SAVE_TIMEOUT     "5m": a save on the way out that does not return -> exit 88 anyway.
RTOOL_MAX_NONFINITE    "10" non-finite losses in a row -> stop WITHOUT saving, hold the array.
RTOOL_AUTO_REQUEUE     "1": after a save on signal / time limit / memory, exit with
RTOOL_MAX_REQUEUES     REQUEUE_EXIT_CODE (85) while $SLURM_RESTART_COUNT < N (unset = no limit).
RTOOL_REQUEUE_EXIT_CODE  overrides 85 (the templates export it; keep them equal).

REQUEUE: the shim never runs `scontrol requeue` itself (a running job requeued from inside is
killed while it is still exiting, and N ranks would requeue N times). It exits 85 and the batch
script, which waits for the training, requeues:
    rc=<exit code of the training>; if [ "$rc" -eq 85 ]; then scontrol requeue "$SLURM_JOB_ID"; fi

Exit codes: 0 stopped after a save (kill switch, signal, time limit, memory; the next array task
resumes), 85 REQUEUE_EXIT_CODE, 86 NONFINITE_EXIT_CODE (stopped without saving, array held),
87 SAVE_FAILED_EXIT_CODE (the save on the way out raised), 88 SAVE_TIMEOUT_EXIT_CODE.

torch.distributed: when it is initialised before the first guard.step(), all ranks combine
their flags with one all-reduce MAX every ~2 s of steps (`sync_every="auto"`, or a fixed number
of steps) and act at the same step; only rank 0 removes the save switch, writes the heartbeat,
holds or cancels array tasks. torch is imported only then, or when min_gpu_free is set.

Imports: stdlib + psutil + rtool.core.units only. The scontrol/scancel calls (EndTime lookup, hold,
cancel of pending tasks) use subprocess.run(timeout=15) directly in rtool.shim.slurm: the one
documented exception to "every subprocess goes through rtool.core.proc". See docs/shim.md.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rtool.core.heartbeat import ErrorInfo, Heartbeat, RunState
from rtool.shim import options as opt
from rtool.shim import slurm as _shim_slurm
from rtool.shim.crash import CrashHooks, error_info
from rtool.shim.distributed import Agreement, initialised_dist
from rtool.shim.forced_exit import ForcedExit
from rtool.shim.heartbeat import HeartbeatWriter
from rtool.shim.monitor import (
    F_GPU,
    F_KILL,
    F_MEMORY,
    F_NONFINITE,
    F_SAVE,
    F_SIGNAL,
    F_TIME,
    Monitor,
    MonitorConfig,
    Sources,
    Timing,
    file_ident,
)
from rtool.shim.options import ShimConfigError
from rtool.shim.signals import SignalFlags

__all__ = [
    "NONFINITE_EXIT_CODE",
    "REQUEUE_EXIT_CODE",
    "SAVE_FAILED_EXIT_CODE",
    "SAVE_TIMEOUT_EXIT_CODE",
    "Decision",
    "Guard",
    "ShimConfigError",
]

log = logging.getLogger("rtool.shim")

REQUEUE_EXIT_CODE = 85
NONFINITE_EXIT_CODE = 86
SAVE_FAILED_EXIT_CODE = 87
SAVE_TIMEOUT_EXIT_CODE = 88

# Stop / save reasons (Decision.reason, heartbeat stop_reason).
KILLED, SIGNAL, TIME_LIMIT, MEMORY = "killed", "signal", "time_limit", "memory"
GPU_MEMORY, NONFINITE, SAVE_SWITCH, SAVE_TIMEOUT = (
    "gpu_memory",
    "nonfinite_loss",
    "save_switch",
    "save_timeout",
)

_STOPS: tuple[tuple[int, str], ...] = (
    (F_KILL, KILLED),
    (F_SIGNAL, SIGNAL),
    (F_TIME, TIME_LIMIT),
    (F_MEMORY, MEMORY),
    (F_GPU, GPU_MEMORY),
)
_NEVER = 1 << 62
_UNDETECTED: Any = object()


@dataclass(frozen=True)
class Decision:
    """What guard.step() did at this step."""

    saved: bool = False  # save(step) was called and returned
    stopping: bool = False  # training must stop (the guard exits unless exit=False)
    reason: str | None = None  # killed, signal, time_limit, memory, gpu_memory, ...
    save_requested: bool = False  # a save was due (with save=None: the caller must save)
    exit_code: int | None = None  # the code the process exits (or should exit) with
    step: int | None = None
    detail: str | None = None


CONTINUE = Decision()


class Guard:
    """The in-loop guard. See the module docstring and docs/shim.md."""

    def __init__(
        self,
        save: Callable[[int], object] | None = None,
        *,
        kill_switch: str | os.PathLike[str] | None = None,
        save_switch: str | os.PathLike[str] | None = None,
        signals: Iterable[str | int] | str | None = ("USR1", "TERM"),
        exit_before_end: str | float | None = None,
        end_time: float | None = None,
        max_memory_used: str | float | None = None,
        min_gpu_free: str | int | None = None,
        heartbeat: str | os.PathLike[str] | None = None,
        save_timeout: str | float = "5m",
        max_nonfinite: int | str = 10,
        auto_requeue: bool | str = False,
        max_requeues: int | str | None = None,
        requeue_exit_code: int | str = REQUEUE_EXIT_CODE,
        sync_every: int | str = "auto",
        sync_seconds: str | float = 2.0,
        poll_interval: str | float = 1.0,
        heartbeat_interval: str | float = 5.0,
        safety_factor: float = 2.0,
        min_margin: str | float = "60s",
        exit: bool = True,
        distributed: bool | None = None,
        job_id: str | None = None,
        start: bool = True,
    ) -> None:
        env = os.environ
        self._save = save
        self._exit = exit
        self._kill_switch = os.fspath(kill_switch) if kill_switch else None
        self._save_switch = os.fspath(save_switch) if save_switch else None
        self._forced = ForcedExit(
            opt.duration("save_timeout", save_timeout), SAVE_TIMEOUT_EXIT_CODE, self._on_forced_exit
        )
        self._stopping_at: tuple[int | None, str] = (None, "")
        self._max_nonfinite = opt.count("max_nonfinite", max_nonfinite, minimum=1) or 10
        self._auto_requeue = opt.flag("auto_requeue", auto_requeue)
        self._max_requeues = opt.count("max_requeues", max_requeues)
        self._requeue_code = opt.count("requeue_exit_code", requeue_exit_code, minimum=1) or 85
        self._sync_fixed = opt.sync_every(sync_every)
        self._sync_seconds = opt.duration("sync_seconds", sync_seconds)
        self._distributed = distributed
        self.job_id = job_id or env.get("SLURM_JOB_ID") or None
        self.array_job_id = env.get("SLURM_ARRAY_JOB_ID") or None
        self.array_task_id = env.get("SLURM_ARRAY_TASK_ID") or None
        self.restart_count = int(env.get("SLURM_RESTART_COUNT", "0") or 0)
        self.rank = int(env.get("RANK") or env.get("SLURM_PROCID") or 0)
        self.world_size = int(env.get("WORLD_SIZE") or env.get("SLURM_NTASKS") or 1)
        self.run = env.get("RTOOL_RUN") or env.get("SLURM_JOB_NAME") or None
        self._first_step: int | None = None
        self._last_save_seconds: float | None = None
        # the step path reads these four
        self._step: int | None = None
        self._alert = False
        self._countdown = 1  # the first step detects torch.distributed
        self._decision = CONTINUE
        self._final: Decision | None = None
        self._agreement: Any = _UNDETECTED
        self._interval = 1
        self._nonfinite = 0
        self._closed = False
        self._finished = False
        self._switch_requested: tuple[int, int] | None = None
        self._src = Sources()
        self._timing = Timing()
        self._heartbeat = self._make_heartbeat(heartbeat)
        self._monitor = Monitor(
            self._monitor_config(
                exit_before_end, end_time, max_memory_used, min_gpu_free, safety_factor, min_margin
            ),
            self._src,
            self._timing,
            self._wake,
            lambda: self._step,
            self._heartbeat,
            self._heartbeat_fields,
        )
        self._monitor.config.poll_interval = opt.duration("poll_interval", poll_interval)
        self._monitor.config.heartbeat_interval = opt.duration(
            "heartbeat_interval", heartbeat_interval
        )
        self._signals = SignalFlags(opt.signals(signals), self._on_signal)
        self._crash_hooks: CrashHooks | None = None
        if self._heartbeat is not None:
            self._heartbeat.progress(RunState.STARTING, self._heartbeat_fields())
            self._crash_hooks = CrashHooks(self._on_crash)
        if start:
            self._monitor.start()

    @classmethod
    def from_env(
        cls,
        save: Callable[[int], object] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Guard:
        """A Guard configured by the RTOOL_* variables; keyword arguments win over them."""
        return cls(save, **{**opt.env_options(environ), **overrides})

    # -- construction helpers ----------------------------------------------------------------

    def _monitor_config(
        self,
        exit_before_end: str | float | None,
        end_time: float | None,
        max_memory_used: str | float | None,
        min_gpu_free: str | int | None,
        safety_factor: float,
        min_margin: str | float,
    ) -> MonitorConfig:
        mem_pct, mem_bytes = opt.memory_limit(max_memory_used)
        gpu_free = opt.size("min_gpu_free", min_gpu_free)
        mc = MonitorConfig(
            kill_switch=self._kill_switch,
            save_switch=self._save_switch,
            memory_percent=mem_pct,
            memory_bytes=mem_bytes,
            gpu_min_free=gpu_free,
            gpu_device=_gpu_device() if gpu_free is not None else 0,
            job_id=self.job_id if end_time is None else None,
            end_time=end_time,
            exit_before_end=opt.exit_before_end(exit_before_end),
            safety_factor=float(safety_factor),
            min_margin=opt.duration("min_margin", min_margin),
        )
        prev = self._heartbeat.previous if self._heartbeat is not None else None
        if prev is not None:
            self._timing.longest_save = prev.longest_save_seconds or 0.0
            self._timing.longest_step = prev.longest_step_seconds or 0.0
        return mc

    def _make_heartbeat(self, path: str | os.PathLike[str] | None) -> HeartbeatWriter | None:
        if not path:
            return None
        now = time.time()
        base = Heartbeat(
            state=RunState.STARTING,
            time=now,
            run=self.run,
            job_id=self.job_id,
            array_job_id=self.array_job_id,
            array_task_id=self.array_task_id,
            restart_count=self.restart_count,
            host=socket.gethostname(),
            rank=self.rank,
            world_size=self.world_size,
            pid=os.getpid(),
            started=now,
        )
        hb = HeartbeatWriter(path, base)
        hb.enabled = self.rank == 0
        if hb.enabled:
            hb.clear_done()
        return hb

    def _on_signal(self, name: str) -> None:
        if self._src.signal is None:
            self._src.signal = name
        self._alert = True

    def _wake(self) -> None:
        self._alert = True

    # -- the loop API ------------------------------------------------------------------------

    def exit_if_killed(self) -> None:
        """Exit 0 at once when the kill switch exists (call at the top of main)."""
        if self._kill_switch and os.path.exists(self._kill_switch):
            log.warning(
                "rtool.shim: kill switch %s exists: exiting (0) without training", self._kill_switch
            )
            self.close()
            raise SystemExit(0)

    def step(self, step: int) -> Decision:
        """Call after each completed step. Cheap unless something happened."""
        self._step = step
        self._countdown -= 1
        if self._alert or self._countdown <= 0:
            return self._slow(step)
        return self._decision

    def check_loss(self, loss: Any) -> bool:
        """False for a non-finite loss (skip the optimizer step); stops after max_nonfinite."""
        value = float(loss)
        if math.isfinite(value):
            self._nonfinite = 0
            return True
        self._nonfinite += 1
        log.warning("rtool.shim: non-finite loss %r (%d in a row)", value, self._nonfinite)
        if self._nonfinite >= self._max_nonfinite:
            self._src.nonfinite = True
            self._alert = True
        return False

    def mark_saved(self, step: int | None = None, seconds: float | None = None) -> None:
        """With save=None (frameworks): the caller's save asked for by a decision returned."""
        self._forced.disarm()
        t = self._timing
        t.saves += 1
        t.last_save_step = self._step if step is None else step
        t.last_save_time = time.time()
        if seconds is not None:
            self._last_save_seconds = seconds
            t.longest_save = max(t.longest_save, seconds)
        if self._switch_requested is not None:
            ident, self._switch_requested = self._switch_requested, None
            self._remove_switch(ident)

    def finished(self, step: int | None = None) -> None:
        """Training complete: heartbeat `finished`, done marker, cancel pending array tasks."""
        if self._finished:
            return
        self._finished = True
        if self._final is not None:  # stopped early (exit=False): not finished, cancel nothing
            log.warning("rtool.shim: finished() after a stop (%s) ignored", self._final.reason)
            self.close()
            return
        step = self._step if step is None else step
        fields = {**self._heartbeat_fields(), "step": step, "time": time.time()}
        if self._heartbeat is not None:
            self._heartbeat.final(RunState.FINISHED, fields)
            self._heartbeat.mark_done()
        if self.rank == 0 and self.array_job_id:
            _shim_slurm.cancel_pending(self.array_job_id)
        log.info("rtool.shim: training finished at step %s", step)
        self.close()

    def close(self) -> None:
        """Stop the thread and restore the signal handlers (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._forced.disarm()
        self._monitor.stop()
        self._signals.restore()
        if self._crash_hooks is not None:
            self._crash_hooks.restore()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None and not isinstance(exc, SystemExit):
            self._on_crash(error_info(exc), True)
        self.close()

    def _on_crash(self, info: ErrorInfo, main_thread: bool) -> None:
        """An uncaught exception: `crashed` in the heartbeat (a thread's: only `error`)."""
        hb = self._heartbeat
        if hb is None:
            return
        if not main_thread:
            hb.progress(hb.current.state, {"error": info})
            return
        now = time.time()
        fields = {
            **self._heartbeat_fields(),
            "error": info,
            "stop_reason": "crashed",
            "stop_detail": str(info),
            "stop_step": self._step,
            "stop_time": now,
            "stop_job_id": self.job_id,
            "exit_code": 1,
        }
        hb.final(RunState.CRASHED, fields)

    @property
    def stopping(self) -> Decision | None:
        """The stop decision once one was taken, else None."""
        return self._final

    # -- the slow path -----------------------------------------------------------------------

    def _slow(self, step: int) -> Decision:
        if self._first_step is None:
            self._first_step = step
        if self._final is not None:
            return self._final
        if self._agreement is _UNDETECTED:
            self._detect()
        agreement = self._agreement
        if agreement is None:
            self._countdown = _NEVER
            return self._act(step, self._collect())
        if self._countdown > 0:
            return CONTINUE
        flags, self._interval = agreement.agree(self._collect(), self._interval)
        self._countdown = self._interval
        return self._act(step, flags)

    def _detect(self) -> None:
        dist = initialised_dist() if self._distributed is not False else None
        if dist is None:
            if self._distributed:
                raise ShimConfigError(
                    "rtool.shim: distributed=True but torch.distributed is not initialised"
                )
            self._agreement = None
            return
        self._agreement = Agreement(dist, self._sync_fixed, self._sync_seconds)
        self.rank = self._agreement.rank
        if self._heartbeat is not None:
            self._heartbeat.enabled = self.rank == 0
            self.world_size = self._agreement.world
        if self._sync_fixed is None:
            self._monitor.config.extra_latency = self._sync_seconds
        self._countdown = 0

    def _collect(self) -> int:
        self._alert = False  # before reading: a finding made meanwhile sets it again
        return self._src.flags()

    def _act(self, step: int, flags: int) -> Decision:
        if flags & F_NONFINITE:
            return self._stop_nonfinite(step)
        for bit, reason in _STOPS:
            if flags & bit:
                return self._stop(step, reason)
        if flags & F_SAVE:
            return self._save_on_switch(step)
        return CONTINUE

    def _detail(self, reason: str) -> str:
        s = self._src
        local = {
            KILLED: s.kill and f"kill switch {self._kill_switch}",
            SIGNAL: s.signal,
            TIME_LIMIT: s.time_up,
            MEMORY: s.memory,
            GPU_MEMORY: s.gpu,
        }.get(reason)
        return str(local) if local else "seen on another rank"

    def _do_save(self, step: int) -> bool:
        assert self._save is not None
        t = self._timing
        t0 = time.monotonic()
        try:
            self._save(step)
        except Exception:
            log.exception("rtool.shim: SAVE FAILED at step %d", step)
            return False
        finally:
            t.saves += 1
        self._last_save_seconds = time.monotonic() - t0
        t.longest_save = max(t.longest_save, self._last_save_seconds)
        t.last_save_step = step
        t.last_save_time = time.time()
        return True

    def _save_on_switch(self, step: int) -> Decision:
        ident = self._take_switch()
        if self._save is None:  # the caller saves, then calls mark_saved()
            self._switch_requested = ident
            return Decision(save_requested=True, reason=SAVE_SWITCH, step=step)
        ok = self._do_save(step)
        if ok:
            self._remove_switch(ident)
        else:
            log.error(
                "rtool.shim: save requested by %s FAILED; the file stays: touch it to retry",
                self._save_switch,
            )
        return Decision(saved=ok, save_requested=True, reason=SAVE_SWITCH, step=step)

    def _take_switch(self) -> tuple[int, int] | None:
        """Mark the save switch as handled, so the thread does not request it again."""
        s = self._src
        with s.lock:
            ident = s.save_ident
            if ident is None and self._save_switch:
                ident = file_ident(self._save_switch)  # seen on another rank only
            s.save_handled = ident
            s.save_ident = None
        return ident

    def _remove_switch(self, ident: tuple[int, int] | None) -> None:
        """After the agreed save returned: rank 0 removes the save switch it saved for."""
        path = self._save_switch
        if path is None or ident is None or self.rank != 0:
            return
        with self._src.lock:
            if file_ident(path) == ident:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        log.info("rtool.shim: saved at step %s on request of %s", self._step, path)

    def _stop(self, step: int, reason: str) -> Decision:
        code = self._stop_code(reason)
        saved = False
        self._stopping_at = (step, reason)
        self._forced.arm()
        if self._save is not None:
            if self._heartbeat is not None:
                fields = {**self._heartbeat_fields(), "step": step}
                self._heartbeat.progress(RunState.SAVING, fields)
            saved = self._do_save(step)
            self._forced.disarm()
            if not saved:
                code = SAVE_FAILED_EXIT_CODE
        if self._src.save_ident is not None:
            ident = self._take_switch()
            if saved:
                self._remove_switch(ident)
        return self._stopped(step, reason, code, saved, save_requested=True)

    def _stop_nonfinite(self, step: int) -> Decision:
        log.error(
            "rtool.shim: %d non-finite losses in a row: stopping at step %d WITHOUT saving "
            "(the last good checkpoint stays)",
            self._max_nonfinite,
            step,
        )
        if self.rank == 0 and self.array_job_id and _shim_slurm.hold_pending(self.array_job_id):
            log.error(
                "rtool.shim: the pending tasks of array %s are held; after a look, release them "
                "with: scontrol release %s",
                self.array_job_id,
                self.array_job_id,
            )
        return self._stopped(step, NONFINITE, NONFINITE_EXIT_CODE, False, save_requested=False)

    def _stop_code(self, reason: str) -> int:
        if reason == KILLED or not self._auto_requeue:
            return 0
        if self._max_requeues is None or self.restart_count < self._max_requeues:
            return self._requeue_code
        log.warning(
            "rtool.shim: %d requeues done (max %d): not asking for another",
            self.restart_count,
            self._max_requeues,
        )
        return 0

    def _stopped(
        self, step: int, reason: str, code: int, saved: bool, save_requested: bool
    ) -> Decision:
        detail = self._detail(reason) if reason != NONFINITE else f"{self._nonfinite} in a row"
        d = Decision(saved, True, reason, save_requested, code, step, detail)
        self._final = self._decision = d
        self._countdown = _NEVER
        self._write_stop(d)
        what = (
            "saved"
            if saved
            else ("save requested" if self._save is None and save_requested else "not saved")
        )
        log.warning(
            "rtool.shim: stopping at step %d: %s (%s); %s; exit code %d",
            step,
            reason,
            detail,
            what,
            code,
        )
        if self._exit:
            self.close()
            raise SystemExit(code)
        return d

    def _write_stop(self, d: Decision) -> None:
        if self._heartbeat is None:
            return
        now = time.time()
        fields = {
            **self._heartbeat_fields(),
            "step": d.step,
            "time": now,
            "stop_reason": d.reason,
            "stop_detail": d.detail,
            "stop_step": d.step,
            "stop_time": now,
            "stop_job_id": self.job_id,
            "exit_code": d.exit_code,
        }
        self._heartbeat.final(RunState.STOPPED, fields)

    def _heartbeat_fields(self) -> dict[str, Any]:
        t, mon = self._timing, self._monitor
        return {
            "step": mon.last_step,
            "time": mon.progress_time or time.time(),
            "step_at_start": self._first_step,
            "step_seconds": t.recent_step,
            "longest_step_seconds": t.longest_step or None,
            "last_save_seconds": self._last_save_seconds,
            "longest_save_seconds": t.longest_save or None,
            "last_saved_step": t.last_save_step,
            "last_save_time": t.last_save_time,
            "nonfinite_count": self._nonfinite,
            "rank": self.rank,
            "world_size": self.world_size,
        }

    def _on_forced_exit(self) -> None:
        step, reason = self._stopping_at
        log.critical(
            "rtool.shim: the save at step %s (stopping: %s) did not return within %gs: "
            "exiting with %d without it",
            step,
            reason,
            self._forced.timeout,
            SAVE_TIMEOUT_EXIT_CODE,
        )
        detail = f"while stopping: {reason}"
        d = Decision(False, True, SAVE_TIMEOUT, True, SAVE_TIMEOUT_EXIT_CODE, step, detail)
        self._write_stop(d)


def _gpu_device() -> int:
    try:
        import torch

        return int(torch.cuda.current_device()) if torch.cuda.is_available() else 0
    except Exception:
        return 0
