"""The shim's daemon thread: polls switch files, memory, GPU memory and the clock.

Everything that costs a syscall happens here, every `poll_interval` seconds, never in
`Guard.step()`. Findings are written to a `Sources` object (one writer per attribute), then
`wake()` sets the one flag the step path reads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from rtool.shim import slurm as _shim_slurm
from rtool.shim.options import GuardOptions
from rtool.shim.switchfile import file_ident, switch_set

log = logging.getLogger("rtool.shim")

#: How often the job's EndTime is asked again by default (a time limit can be changed while
#: running; RTOOL_END_TIME_REFRESH / end_time_refresh sets it).
END_TIME_REFRESH = 300.0
#: How often GPU memory is checked (it goes through torch/CUDA: rarely).
GPU_INTERVAL = 30.0
#: Least margin before the job's end when a deadline signal defers the stop (exit + requeue).
DEADLINE_MIN_MARGIN = 10.0


#: Flag bits, exchanged between ranks (rtool.shim.distributed.FLAG_BITS of them).
F_KILL, F_SIGNAL, F_TIME, F_MEMORY, F_GPU, F_NONFINITE, F_SAVE = (1 << i for i in range(7))


@dataclass
class Sources:
    """What the thread, the signal handlers and check_loss found; read by the step path."""

    signal: str | None = None  # written by the signal handler
    deadline_signal: str | None = None  # a signal announcing the job's end (the thread acts)
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
    last_save_seconds: float | None = None
    first_step: int | None = None  # the first step of this process
    nonfinite: int = 0  # non-finite losses in a row

    def saved(self, step: int | None, seconds: float | None) -> None:
        """A save of `step` returned after `seconds` (None: not measured)."""
        self.saves += 1
        self.last_save_step = step
        self.last_save_time = time.time()
        if seconds is not None:
            self.last_save_seconds = seconds
            self.longest_save = max(self.longest_save, seconds)


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
    end_time_refresh: float = END_TIME_REFRESH
    exit_before_end: float | str | None = None  # seconds, "auto" or None (off)
    safety_factor: float = 2.0
    min_margin: float = 60.0
    extra_latency: float = 0.0  # sync latency of torch.distributed, added to the auto margin
    poll_interval: float = 1.0
    heartbeat_interval: float = 5.0
    deadline_window: float = 900.0
    signal_stop_at: float | None = None  # wall time to stop at, set by a deadline signal

    @classmethod
    def from_options(cls, o: GuardOptions, job_id: str | None) -> MonitorConfig:
        return cls(
            kill_switch=o.kill_switch,
            save_switch=o.save_switch,
            memory_percent=o.max_memory_percent,
            memory_bytes=o.max_memory_bytes,
            gpu_min_free=o.min_gpu_free,
            gpu_device=_gpu_device() if o.min_gpu_free is not None else 0,
            job_id=job_id,
            end_time=o.end_time,
            end_time_refresh=o.end_time_refresh,
            exit_before_end=o.exit_before_end,
            safety_factor=o.safety_factor,
            min_margin=o.min_margin,
            poll_interval=o.poll_interval,
            heartbeat_interval=o.heartbeat_interval,
            deadline_window=o.deadline_window,
        )


class Monitor:
    """The polling thread (daemon). `poll()` is one round, callable directly in tests."""

    def __init__(
        self,
        config: MonitorConfig,
        sources: Sources,
        timing: Timing,
        wake: Callable[[], None],
    ) -> None:
        self.config = config
        self.sources = sources
        self.timing = timing
        self._wake = wake
        self.current_step: Callable[[], int | None] = lambda: None
        self.on_progress: Callable[[], None] | None = None  # the heartbeat write
        self.watchers: list[Callable[[float], None]] = []  # more checks, each round
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_step: int | None = None
        self._last_change = 0.0
        self._saves_seen = 0
        self._last_beat = float("-inf")
        self._beat_step: int | None = None
        self._end_checked = float("-inf")
        self._deadline_signal_seen = False
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
        self._poll_deadline_signal(mono, wall)
        self._poll_deadline(mono, wall)
        for watch in self.watchers:
            watch(mono)
        self._beat(mono)

    @property
    def knows_end_time(self) -> bool:
        """The job's end can be known (a job id to ask Slurm, or a given end time)."""
        return bool(self.config.job_id) or self.config.end_time is not None

    # -- probes ---------------------------------------------------------------------------

    def _poll_switches(self) -> None:
        c, s = self.config, self.sources
        if c.kill_switch and not s.kill and switch_set(c.kill_switch, "kill"):
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
        cur = self.current_step()
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

    def _refresh_end_time(self, mono: float, force: bool = False) -> None:
        c = self.config
        if c.job_id and (force or mono - self._end_checked >= c.end_time_refresh):
            self._end_checked = mono
            end = _shim_slurm.job_end_time(c.job_id)
            if end is not None:
                c.end_time = end

    def _poll_deadline_signal(self, mono: float, wall: float) -> None:
        """A signal announced the job's end: train on until EndTime - (save + margin)."""
        c, s = self.config, self.sources
        name = s.deadline_signal
        if name is None or self._deadline_signal_seen:
            return
        self._deadline_signal_seen = True
        self._refresh_end_time(mono, force=True)
        margin = self.deadline_margin(mono)
        left = None if c.end_time is None else c.end_time - wall
        if left is None or left <= margin or left > c.deadline_window:
            why = "no end time" if left is None else f"{left:.0f}s left"
            log.warning("rtool.shim: %s (%s): stopping now", name, why)
            if s.signal is None:
                s.signal = name
            self._wake()
            return
        assert c.end_time is not None
        c.signal_stop_at = c.end_time - margin
        log.warning(
            "rtool.shim: %s: the job ends in %.0fs; training on until %.0fs before it",
            name,
            left,
            margin,
        )

    def deadline_margin(self, mono: float | None = None) -> float:
        """Seconds before the job's end at which to stop after a deadline signal."""
        return max(DEADLINE_MIN_MARGIN, self.margin(mono, auto=True))

    def _poll_deadline(self, mono: float, wall: float) -> None:
        c, s = self.config, self.sources
        if s.time_up is not None:
            return
        if c.signal_stop_at is not None and wall >= c.signal_stop_at:
            left = (c.end_time or wall) - wall
            s.time_up = (
                f"{s.deadline_signal} announced the end: stopped {left:.0f}s before it "
                f"(measured save {self.timing.longest_save:.1f}s)"
            )
            self._wake()
            return
        if c.exit_before_end is None:
            return
        self._refresh_end_time(mono)
        if c.end_time is None:
            return
        margin = self.margin(mono)
        if wall >= c.end_time - margin:
            left = c.end_time - wall
            self.sources.time_up = f"{left:.0f}s left of the time limit (exit margin {margin:.0f}s)"
            self._wake()

    def margin(self, mono: float | None = None, auto: bool = False) -> float:
        """Seconds before the end of the job at which to save and exit (`auto`: the measured
        need, without the floor)."""
        c = self.config
        if isinstance(c.exit_before_end, (int, float)) and not auto:
            return float(c.exit_before_end)
        t = self.timing
        step = t.longest_step
        if self._last_step is not None and mono is not None:
            step = max(step, mono - self._last_change)  # the current step is already this long
        need = c.safety_factor * (step + t.longest_save) + c.poll_interval + c.extra_latency
        return need if auto else max(c.min_margin, need)

    def _beat(self, mono: float) -> None:
        if self.on_progress is None or self._last_step in (None, self._beat_step):
            return
        if mono - self._last_beat < self.config.heartbeat_interval:
            return
        self._last_beat = mono
        self._beat_step = self._last_step
        self.on_progress()


def _gpu_device() -> int:
    try:
        import torch

        return int(torch.cuda.current_device()) if torch.cuda.is_available() else 0
    except Exception:
        return 0
