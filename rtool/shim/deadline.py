"""When to stop before the job's end: as late as the measured save allows, at a step boundary
(docs/shim.md, "Stop at the deadline, not when the signal lands").

A deadline signal or `exit_before_end` gives a stop time: the job's end minus the lead
(safety_factor x the longest measured save + EXIT_SLACK + the longest exit of earlier attempts,
`exit_need.py`; wider margins until a save was measured). Near it the step path reads the
clock at every step (`Sources.deadline_at`) and stops at the last boundary after which one more
step would run past it; the thread stops the run itself when the stop time passed and no step
came.
"""

from __future__ import annotations

import logging

from rtool.shim import slurm as _shim_slurm
from rtool.shim.state import Loop, MonitorConfig, Sources, Timing

log = logging.getLogger("rtool.shim")

#: Least margin before the job's end when a deadline signal defers the stop and no save was
#: measured yet (exit + requeue).
DEADLINE_MIN_MARGIN = 10.0
#: The unmeasured margin of `exit_before_end = "auto"` is at most this share of the time left
#: when the job's end was first known (a 1-minute job does not stop at once for a 60 s floor).
SHORT_SHARE = 0.1
#: What the exit after the save needs (process exit, the batch script's requeue), seconds.
EXIT_SLACK = 3.0


class Deadline:
    """The stop time of one Guard; `poll()` runs in the monitor thread every round."""

    def __init__(self, config: MonitorConfig, sources: Sources, timing: Timing, loop: Loop) -> None:
        self.config, self.sources, self.timing, self.loop = config, sources, timing, loop
        self._end_checked = float("-inf")
        self._signal_seen = False
        self.signal_stop_at: float | None = None  # wall time to stop at after a deadline signal
        self.stop_at: float | None = None  # the stop time in force (the earliest of both ways)
        self._boundary: float | None = None  # the step path's previous boundary, once near
        self._span: float | None = None  # the time left when the end was first known

    def step_estimate(self) -> float:
        """How long one more step may take: the longest step seen (the recent one if none)."""
        t = self.timing
        return max(t.longest_step, t.recent_step or 0.0)

    def lead(self, floor: float, mono: float | None = None) -> float:
        """Seconds before the end at which the save must start (`floor`: the margin while no
        save was measured); both ways leave the exit that earlier attempts measured."""
        c, t = self.config, self.timing
        if t.longest_save > 0:
            return c.opts.safety_factor * t.longest_save + EXIT_SLACK + t.exit_need
        step = t.longest_step if mono is None else max(t.longest_step, t.step_age(mono))
        need = (
            c.opts.safety_factor * (step + t.longest_save) + c.opts.poll_interval + c.extra_latency
        )
        return max(floor, need + t.exit_need)

    def margin(self, mono: float | None = None) -> float:
        """The `exit_before_end` margin: fixed, or the learned lead (floor `min_margin`, or
        SHORT_SHARE of the time that was left when the end was first known, for a short job:
        at least DEADLINE_MIN_MARGIN)."""
        c = self.config
        if isinstance(c.opts.exit_before_end, (int, float)):
            return float(c.opts.exit_before_end)
        floor = c.opts.min_margin
        if self._span is not None:
            floor = min(floor, max(DEADLINE_MIN_MARGIN, SHORT_SHARE * self._span))
        return self.lead(floor, mono)

    def refresh_end_time(self, mono: float, force: bool = False) -> None:
        c = self.config
        if c.job_id and (force or mono - self._end_checked >= c.opts.end_time_refresh):
            self._end_checked = mono
            end = _shim_slurm.job_end_time(c.job_id)
            if end is not None:
                c.end_time = end

    def poll(self, mono: float, wall: float) -> None:
        if self.sources.time_up is not None:
            return
        self._deadline_signal(mono, wall)
        stops: list[float] = []
        if self.signal_stop_at is not None:
            self.signal_stop_at = self._signal_stop(mono)
            if self.signal_stop_at is not None:
                stops.append(self.signal_stop_at)
        if self.config.opts.exit_before_end is not None:
            self.refresh_end_time(mono)
            if self.config.end_time is not None:
                if self._span is None:
                    self._span = self.config.end_time - wall
                stops.append(self.config.end_time - self.margin(mono))
        self.stop_at = min(stops) if stops else None
        if self.stop_at is None:
            return
        if wall >= self.stop_at:  # no step boundary came in time: stop at the next one
            self.sources.time_up = self.detail(wall)
            self.loop.wake()
        elif wall >= self.stop_at - self._window():
            if self.sources.deadline_at != self.stop_at:
                self.sources.deadline_at = self.stop_at  # the step path reads the clock now
                self.loop.wake()
        else:
            self.sources.deadline_at = None  # moved away (a longer TimeLimit): not near

    def _window(self) -> float:
        return self.config.opts.poll_interval + 2 * self.step_estimate() + 0.5

    def _signal_stop(self, mono: float) -> float | None:
        end = self.config.end_time
        return None if end is None else end - max(self.lead(DEADLINE_MIN_MARGIN, mono), 1.0)

    def _deadline_signal(self, mono: float, wall: float) -> None:
        """A signal announced the job's end: train on until the end minus the lead."""
        c, s = self.config, self.sources
        name = s.deadline_signal
        if name is None or self._signal_seen:
            return
        self._signal_seen = True
        self.refresh_end_time(mono, force=True)
        stop = self._signal_stop(mono)
        left = None if c.end_time is None else c.end_time - wall
        if stop is None or left is None or wall >= stop or left > c.opts.deadline_window:
            why = "no end time" if left is None else f"{left:.0f}s left"
            log.warning("rtool.shim: %s (%s): stopping now", name, why)
            if s.signal is None:
                s.signal = name
            self.loop.wake()
            return
        self.signal_stop_at = stop
        log.warning(
            "rtool.shim: %s: the job ends in %.0fs; training on until %.1fs before it",
            name,
            left,
            left - (stop - wall),
        )

    def detail(self, wall: float) -> str:
        """Why the run stops now (the heartbeat's stop_detail)."""
        c, s = self.config, self.sources
        left = (c.end_time or wall) - wall
        if self.signal_stop_at is not None and self.stop_at == self.signal_stop_at:
            return (
                f"{s.deadline_signal} announced the end: stopped {left:.1f}s before it "
                f"(measured save {self.timing.longest_save:.1f}s{self._exit_text()})"
            )
        margin = (c.end_time or wall) - (self.stop_at or wall)
        return f"{left:.0f}s left of the time limit (exit margin {margin:.0f}s{self._exit_text()})"

    def _exit_text(self) -> str:
        need = self.timing.exit_need
        return f", exit {need:.1f}s measured in earlier attempts" if need > 0 else ""

    def at_boundary(self, wall: float) -> bool:
        """In the step path, once near: stop now, as one more step would pass the stop time."""
        at = self.sources.deadline_at
        if at is None or self.sources.time_up is not None:
            return False
        last, self._boundary = self._boundary, wall
        step = max(self.step_estimate(), wall - last if last is not None else 0.0)
        if wall + step < at:
            return False
        self.sources.time_up = self.detail(wall)
        return True
