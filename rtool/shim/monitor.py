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

import psutil

from rtool.core import cgroup
from rtool.core.units import format_size
from rtool.shim.deadline import Deadline
from rtool.shim.report import Reporter
from rtool.shim.state import Loop, MonitorConfig, Sources, Timing
from rtool.shim.switchfile import file_ident, switch_set
from rtool.shim.watch import InProcessWatch

log = logging.getLogger("rtool.shim")

#: How often GPU memory is checked (it goes through torch/CUDA: rarely).
GPU_INTERVAL = 30.0
#: `save_every = "auto"`: save as often as keeps the measured save at this share of the time.
SAVE_OVERHEAD = 0.01


class Monitor:
    """The polling thread (daemon); `poll()` is one round."""

    def __init__(
        self,
        config: MonitorConfig,
        sources: Sources,
        timing: Timing,
        loop: Loop,
        deadline: Deadline,
        report: Reporter,
        watch: InProcessWatch,
    ) -> None:
        self.config, self.sources, self.timing, self.loop = config, sources, timing, loop
        self.deadline, self.report, self.watch = deadline, report, watch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._saves_seen = 0
        self._last_beat = float("-inf")
        self._beat_step: int | None = None
        self._gpu_checked = float("-inf")
        self._gpu_broken = False
        o = config.opts
        self.cgroup = _job_cgroup() if o.max_memory_percent or o.max_memory_bytes else None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rtool-shim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2 * self.config.opts.poll_interval + 1)

    def _run(self) -> None:
        failures = 0
        while True:
            try:
                self.poll()
            except Exception:  # keep polling; a broken probe must not end the guard
                failures += 1
                if failures <= 3:
                    log.exception("rtool.shim: poll failed")
            if self._stop.wait(self.config.opts.poll_interval):
                return

    def poll(self) -> None:
        mono, wall = time.monotonic(), time.time()
        self._poll_switches()
        self._poll_memory()
        self._poll_gpu(mono)
        self._observe_step(mono, wall)
        self._poll_periodic(wall)
        self.deadline.poll(mono, wall)
        self.watch.round(mono)
        self._beat(mono)

    def _poll_switches(self) -> None:
        c, s = self.config, self.sources
        if c.opts.kill_switch and not s.kill and switch_set(c.opts.kill_switch, "kill"):
            s.kill = True
            self.loop.wake()
        if c.opts.save_switch:
            ident = file_ident(c.opts.save_switch)
            with s.lock:
                fresh = ident is not None and ident != s.save_handled and s.save_ident is None
                if fresh:
                    s.save_ident = ident
            if fresh:
                self.loop.wake()

    def _poll_memory(self) -> None:
        """The job's cgroup limit where it has one (docs/shim.md), else the host's RAM."""
        share, size = self.config.opts.max_memory_percent, self.config.opts.max_memory_bytes
        if share is None and size is None:
            return
        found = memory_use(self.cgroup)
        if found is None:
            return
        used, total, what = found
        pct = used / total * 100.0 if total else 0.0
        if share is not None and pct >= share:
            self.sources.memory = f"{what} {pct:.1f}% used (limit {share:g}%)"
        elif size is not None and used >= size:
            self.sources.memory = f"{what} {used} bytes used (limit {size})"
        else:
            return
        self.loop.wake()

    def _poll_gpu(self, mono: float) -> None:
        floor, device = self.config.opts.min_gpu_free, self.config.gpu_device
        if floor is None or self._gpu_broken or mono - self._gpu_checked < GPU_INTERVAL:
            return
        self._gpu_checked = mono
        try:
            import torch

            free, _total = torch.cuda.mem_get_info(device)
        except Exception as exc:
            self._gpu_broken = True
            log.warning("rtool.shim: GPU memory check disabled: %s", exc)
            return
        if free < floor:
            self.sources.gpu = f"GPU {device} has {free} bytes free (floor {floor})"
            self.loop.wake()

    def save_interval(self) -> float | None:
        """Seconds between the saves of `save_every` (auto: the typical measured save over
        SAVE_OVERHEAD; None until a save was measured)."""
        every, typical = self.config.opts.save_every, self.timing.typical_save()
        if isinstance(every, (int, float)):
            return float(every)
        if every == "auto" and typical > 0:
            return typical / SAVE_OVERHEAD
        return None

    def _poll_periodic(self, wall: float) -> None:
        """A save is due: the last one (or the first step) is `save_interval` old."""
        every, t = self.save_interval(), self.timing
        if every is None or t.first_step_time is None or self.sources.periodic:
            return
        since = max(t.first_step_time, t.last_save_time or 0.0)  # this process's saves only
        if wall - since >= every:
            self.sources.periodic = True
            self.loop.wake()

    def _observe_step(self, mono: float, wall: float) -> None:
        cur, t = self.loop.step, self.timing
        if cur is None or cur == t.seen_step:
            return
        if t.seen_step is not None and t.saves == self._saves_seen:
            n = cur - t.seen_step if cur > t.seen_step else 1
            per = (mono - t.seen_at) / n
            t.recent_step = per
            t.longest_step = max(t.longest_step, per)
        self._saves_seen = t.saves
        t.seen_step, t.seen_at, t.progress_time = cur, mono, wall

    def _beat(self, mono: float) -> None:
        seen = self.timing.seen_step
        if seen in (None, self._beat_step):
            return
        if mono - self._last_beat < self.config.opts.heartbeat_interval:
            return
        self._last_beat, self._beat_step = mono, seen
        self.report.progress()


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
