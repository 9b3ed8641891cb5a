"""The shim's daemon thread: polls switch files, memory, GPU memory and the clock.

Everything that costs a syscall happens here, every `poll_interval` seconds, never in
`Guard.step()`. Findings are written to a `Sources` object (one writer per attribute), then
`wake()` sets the one flag the step path reads.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from rtool.core.heartbeat import RunState
from rtool.shim import slurm as _shim_slurm
from rtool.shim.heartbeat import HeartbeatWriter

log = logging.getLogger("rtool.shim")

#: How often the job's EndTime is asked again (a time limit can be changed while running).
END_TIME_REFRESH = 300.0
#: How often GPU memory is checked (it goes through torch/CUDA: rarely).
GPU_INTERVAL = 30.0


#: Flag bits, exchanged between ranks (rtool.shim.distributed.FLAG_BITS of them).
F_KILL, F_SIGNAL, F_TIME, F_MEMORY, F_GPU, F_NONFINITE, F_SAVE = (1 << i for i in range(7))


@dataclass
class Sources:
    """What the thread, the signal handlers and check_loss found; read by the step path."""

    signal: str | None = None  # written by the signal handler
    kill: bool = False
    save_ident: tuple[int, int] | None = None  # (inode, mtime_ns) of a save switch to act on
    save_handled: tuple[int, int] | None = None  # the switch already saved for (or failed)
    time_up: str | None = None
    memory: str | None = None
    gpu: str | None = None
    nonfinite: bool = False  # written by check_loss
    lock: threading.Lock = field(default_factory=threading.Lock)

    def flags(self) -> int:
        """The F_* bits of what was found."""
        bits = (
            (self.kill, F_KILL),
            (self.signal, F_SIGNAL),
            (self.time_up, F_TIME),
            (self.memory, F_MEMORY),
            (self.gpu, F_GPU),
            (self.nonfinite, F_NONFINITE),
            (self.save_ident is not None, F_SAVE),
        )
        return sum(bit for found, bit in bits if found)


@dataclass
class Timing:
    """Step and save durations seen so far (seconds)."""

    recent_step: float | None = None
    longest_step: float = 0.0
    longest_save: float = 0.0
    saves: int = 0  # bumped by every save, so a step interval with a save is not measured
    last_save_step: int | None = None
    last_save_time: float | None = None


@dataclass
class MonitorConfig:
    kill_switch: str | None = None
    save_switch: str | None = None
    memory_percent: float | None = None
    memory_bytes: int | None = None
    gpu_min_free: int | None = None
    gpu_device: int = 0
    job_id: str | None = None
    end_time: float | None = None
    exit_before_end: float | str | None = None  # seconds, "auto" or None (off)
    safety_factor: float = 2.0
    min_margin: float = 60.0
    extra_latency: float = 0.0  # sync latency of torch.distributed, added to the auto margin
    poll_interval: float = 1.0
    heartbeat_interval: float = 5.0


class Monitor:
    """The polling thread (daemon). `poll()` is one round, callable directly in tests."""

    def __init__(
        self,
        config: MonitorConfig,
        sources: Sources,
        timing: Timing,
        wake: Callable[[], None],
        current_step: Callable[[], int | None],
        heartbeat: HeartbeatWriter | None,
        heartbeat_fields: Callable[[], dict[str, Any]],
    ) -> None:
        self.config = config
        self.sources = sources
        self.timing = timing
        self._wake = wake
        self._current_step = current_step
        self.heartbeat = heartbeat
        self._heartbeat_fields = heartbeat_fields
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_step: int | None = None
        self._last_change = 0.0
        self._saves_seen = 0
        self._last_beat = float("-inf")
        self._beat_step: int | None = None
        self._end_checked = float("-inf")
        self._gpu_checked = float("-inf")
        self._gpu_broken = False
        self.progress_time: float | None = None  # wall time the step last advanced

    @property
    def last_step(self) -> int | None:
        """The step the thread last saw (the heartbeat's `step`)."""
        return self._last_step

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rtool-shim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2 * self.config.poll_interval + 1)

    def _run(self) -> None:
        failures = 0
        while True:
            try:
                self.poll()
            except Exception:  # keep polling; a broken probe must not end the guard
                failures += 1
                if failures <= 3:
                    log.exception("rtool.shim: poll failed")
            if self._stop.wait(self.config.poll_interval):
                return

    def poll(self, mono: float | None = None, wall: float | None = None) -> None:
        mono = time.monotonic() if mono is None else mono
        wall = time.time() if wall is None else wall
        self._poll_switches()
        self._poll_memory()
        self._poll_gpu(mono)
        self._observe_step(mono, wall)
        self._poll_deadline(mono, wall)
        self._beat(mono)

    # -- probes ---------------------------------------------------------------------------

    def _poll_switches(self) -> None:
        c, s = self.config, self.sources
        if c.kill_switch and not s.kill and os.path.exists(c.kill_switch):
            s.kill = True
            self._wake()
        if c.save_switch:
            ident = file_ident(c.save_switch)
            with s.lock:
                fresh = ident is not None and ident != s.save_handled and s.save_ident is None
                if fresh:
                    s.save_ident = ident
            if fresh:
                self._wake()

    def _poll_memory(self) -> None:
        c = self.config
        if c.memory_percent is None and c.memory_bytes is None:
            return
        vm = psutil.virtual_memory()
        used = vm.total - vm.available
        if c.memory_percent is not None and vm.percent >= c.memory_percent:
            self.sources.memory = (
                f"host memory {vm.percent:.1f}% used (limit {c.memory_percent:g}%)"
            )
        elif c.memory_bytes is not None and used >= c.memory_bytes:
            self.sources.memory = f"host memory {used} bytes used (limit {c.memory_bytes})"
        else:
            return
        self._wake()

    def _poll_gpu(self, mono: float) -> None:
        c = self.config
        if c.gpu_min_free is None or self._gpu_broken or mono - self._gpu_checked < GPU_INTERVAL:
            return
        self._gpu_checked = mono
        try:
            import torch

            free, _total = torch.cuda.mem_get_info(c.gpu_device)
        except Exception as exc:
            self._gpu_broken = True
            log.warning("rtool.shim: GPU memory check disabled: %s", exc)
            return
        if free < c.gpu_min_free:
            self.sources.gpu = f"GPU {c.gpu_device} has {free} bytes free (floor {c.gpu_min_free})"
            self._wake()

    def _observe_step(self, mono: float, wall: float) -> None:
        cur = self._current_step()
        if cur is None or cur == self._last_step:
            return
        t = self.timing
        if self._last_step is not None and t.saves == self._saves_seen:
            n = cur - self._last_step if cur > self._last_step else 1
            per = (mono - self._last_change) / n
            t.recent_step = per
            t.longest_step = max(t.longest_step, per)
        self._saves_seen = t.saves
        self._last_step = cur
        self._last_change = mono
        self.progress_time = wall

    def _poll_deadline(self, mono: float, wall: float) -> None:
        c = self.config
        if c.exit_before_end is None or self.sources.time_up is not None:
            return
        if c.job_id and mono - self._end_checked >= END_TIME_REFRESH:
            self._end_checked = mono
            end = _shim_slurm.job_end_time(c.job_id)
            if end is not None:
                c.end_time = end
        if c.end_time is None:
            return
        margin = self.margin(mono)
        if wall >= c.end_time - margin:
            left = c.end_time - wall
            self.sources.time_up = f"{left:.0f}s left of the time limit (exit margin {margin:.0f}s)"
            self._wake()

    def margin(self, mono: float | None = None) -> float:
        """Seconds before the end of the job at which to save and exit."""
        c = self.config
        if isinstance(c.exit_before_end, (int, float)):
            return float(c.exit_before_end)
        t = self.timing
        step = t.longest_step
        if self._last_step is not None and mono is not None:
            step = max(step, mono - self._last_change)  # the current step is already this long
        need = c.safety_factor * (step + t.longest_save) + c.poll_interval + c.extra_latency
        return max(c.min_margin, need)

    def _beat(self, mono: float) -> None:
        hb = self.heartbeat
        if hb is None or self._last_step is None or self._last_step == self._beat_step:
            return
        if mono - self._last_beat < self.config.heartbeat_interval:
            return
        self._last_beat = mono
        self._beat_step = self._last_step
        hb.progress(RunState.RUNNING, self._heartbeat_fields())


def file_ident(path: str) -> tuple[int, int] | None:
    """(inode, mtime_ns) of `path`, or None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)
