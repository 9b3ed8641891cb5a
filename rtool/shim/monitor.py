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

import psutil

from rtool.core import cgroup
from rtool.core.units import format_size
from rtool.shim.deadline import Deadline
from rtool.shim.options import GuardOptions
from rtool.shim.switchfile import file_ident, switch_set

log = logging.getLogger("rtool.shim")

#: How often the job's EndTime is asked again by default (a time limit can be changed while
#: running; RTOOL_END_TIME_REFRESH / end_time_refresh sets it).
END_TIME_REFRESH = 300.0
#: How often GPU memory is checked (it goes through torch/CUDA: rarely).
GPU_INTERVAL = 30.0


#: Flag bits, exchanged between ranks (rtool.shim.distributed.FLAG_BITS of them).
F_KILL, F_SIGNAL, F_TIME, F_MEMORY, F_GPU, F_NONFINITE, F_SAVE, F_PERIODIC = (
    1 << i for i in range(8)
)
#: `save_every = "auto"`: save as often as keeps the measured save at this share of the time.
SAVE_OVERHEAD = 0.01


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
    deadline_at: float | None = None  # the stop time, near: the step path reads the clock
    periodic: bool = False  # a save of the save_every cadence is due
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
            (self.periodic, F_PERIODIC),
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
    first_step_time: float | None = None  # when it was seen
    saving_since: float | None = None  # monotonic start of a save in progress (no hang then)
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
    save_every: float | str | None = None  # seconds, "auto" or None (off)

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
            save_every=o.save_every,
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
        self._gpu_checked = float("-inf")
        self._gpu_broken = False
        self.progress_time: float | None = None  # wall time the step last advanced
        self.deadline = Deadline(config, sources, timing, wake)
        self.deadline.step_age = self._step_age
        self.cgroup = _job_cgroup() if config.memory_percent or config.memory_bytes else None

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
        self._poll_periodic(wall)
        self.deadline.poll(mono, wall)
        for watch in self.watchers:
            watch(mono)
        self._beat(mono)

    @property
    def knows_end_time(self) -> bool:
        """The job's end can be known (a job id to ask Slurm, or a given end time)."""
        return self.deadline.knows_end_time

    def margin(self, mono: float | None = None) -> float:
        """Seconds before the end of the job at which the save must start (exit_before_end)."""
        return self.deadline.margin(mono)

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
        """The job's cgroup limit where it has one (docs/shim.md), else the host's RAM."""
        c = self.config
        if c.memory_percent is None and c.memory_bytes is None:
            return
        found = memory_use(self.cgroup)
        if found is None:
            return
        used, total, what = found
        pct = used / total * 100.0 if total else 0.0
        if c.memory_percent is not None and pct >= c.memory_percent:
            self.sources.memory = f"{what} {pct:.1f}% used (limit {c.memory_percent:g}%)"
        elif c.memory_bytes is not None and used >= c.memory_bytes:
            self.sources.memory = f"{what} {used} bytes used (limit {c.memory_bytes})"
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

    def save_interval(self) -> float | None:
        """Seconds between the saves of `save_every` (auto: the longest measured save over
        SAVE_OVERHEAD; None until a save was measured)."""
        every = self.config.save_every
        if isinstance(every, (int, float)):
            return float(every)
        if every == "auto" and self.timing.longest_save > 0:
            return self.timing.longest_save / SAVE_OVERHEAD
        return None

    def _poll_periodic(self, wall: float) -> None:
        """A save is due: the last one (or the first step) is `save_interval` old."""
        every, t = self.save_interval(), self.timing
        if every is None or t.first_step_time is None or self.sources.periodic:
            return
        since = max(t.first_step_time, t.last_save_time or 0.0)  # this process's saves only
        if wall - since >= every:
            self.sources.periodic = True
            self._wake()

    def _step_age(self, mono: float) -> float:
        """How long the current step has run so far (0 before the first step)."""
        return mono - self._last_change if self._last_step is not None else 0.0

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

    def _beat(self, mono: float) -> None:
        if self.on_progress is None or self._last_step in (None, self._beat_step):
            return
        if mono - self._last_beat < self.config.heartbeat_interval:
            return
        self._last_beat = mono
        self._beat_step = self._last_step
        self.on_progress()


def _job_cgroup() -> str | None:
    """The cgroup folder whose limit binds this process, when it has one below the host's RAM."""
    found = cgroup.memory_of(host=psutil.virtual_memory().total)
    return found.folder if found is not None and found.limit is not None else None


def memory_use(folder: str | None) -> tuple[int, int, str] | None:
    """(used, limit, what) of the job's cgroup `folder`, else of the host."""
    if folder is not None:
        version = 2 if os.path.exists(os.path.join(folder, "memory.max")) else 1
        got = cgroup.read_folder(folder, version, None)
        if got is not None and got.limit:
            return got.usage, got.limit, f"job memory (cgroup {got.where} {format_size(got.limit)})"
    vm = psutil.virtual_memory()
    return vm.total - vm.available, vm.total, "host memory"


def _gpu_device() -> int:
    try:
        import torch

        return int(torch.cuda.current_device()) if torch.cuda.is_available() else 0
    except Exception:
        return 0
