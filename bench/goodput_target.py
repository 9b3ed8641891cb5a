"""The targets of issues #14 and #27, checked on the runs of bench/goodput.py (pure arithmetic).

- ideal-achievable goodput: the goodput of the `ideal` setup (rtool, the same training and task
  time limits, no fault but the time-limit restarts); rtool's goodput under the fault script as
  a fraction of it must be at least FRACTION (0.98 with the defaults, issue #38; 0.95 for #27);
- start-up latency: from an attempt's start (sacct Start, whole seconds) to the first training
  step of the process it started, on the attempts of the ideal run (the median is the figure);
  every fault must be back to training within that latency plus SLACK_S, a hang within that
  beyond the hang threshold (the in-process detection waits that long for a step);
- with a queue wait (bench/goodput_queue.py), rtool's goodput at least MARGIN above plain
  sbatch's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FRACTION = 0.98
SLACK_S = 5.0
MARGIN = 0.1


@dataclass(frozen=True)
class Latency:
    """Start-up latencies of one run's attempts (seconds), and the figure used for the target."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


def first_step_times(steps: Iterable[tuple[float, int]]) -> list[float]:
    """The time of the first step of each process, from (time, pid) pairs in log order."""
    first: dict[int, float] = {}
    for t, pid in steps:
        first.setdefault(pid, t)
    return sorted(first.values())


def startup_latencies(starts: Iterable[float], firsts: Sequence[float]) -> Latency:
    """For each attempt start, the delay to the first process start (first step) at or after it.

    `starts` may be floored to the second (sacct); an attempt no process followed (cancelled
    pending tasks, an attempt that never trained) gives no sample; each first step is claimed by
    the latest start before it, so a requeue racing a start never counts twice.
    """
    ordered = sorted(set(starts))
    out = []
    for i, s in enumerate(ordered):
        nxt = ordered[i + 1] if i + 1 < len(ordered) else float("inf")
        t = next((f for f in firsts if s <= f < nxt), None)
        if t is not None:
            out.append(t - s)
    return Latency(tuple(out))


def goodput(unique_steps: int, step_s: float, allocated: float) -> float | None:
    """Useful training time over allocated time; None when nothing was allocated (the one
    definition, rtool.runs.steps.goodput, with the steps the toy's log shows kept)."""
    from rtool.runs.steps import goodput as kept_goodput

    return kept_goodput(unique_steps, step_s, allocated)


def fraction_line(rtool: float | None, ideal: float | None) -> str:
    """rtool's goodput as a fraction of the ideal-achievable one, and the verdict."""
    if rtool is None or ideal is None or ideal <= 0:
        return "goodput vs ideal: - (needs the rtool and ideal setups)"
    frac = rtool / ideal
    verdict = "meets" if frac >= FRACTION else "MISSES"
    return (
        f"goodput vs ideal: rtool {rtool:.3f} / ideal {ideal:.3f} = {frac:.3f} "
        f"({verdict} >= {FRACTION})"
    )


def margin_line(rtool: float, plain: float, what: str) -> str:
    """rtool's goodput above plain sbatch's, and the verdict (MARGIN)."""
    diff = rtool - plain
    verdict = "meets" if round(diff, 3) >= MARGIN else "MISSES"  # as printed
    return (
        f"goodput rtool - plain ({what}): {rtool:.3f} - {plain:.3f} = {diff:+.3f} "
        f"({verdict} >= +{MARGIN})"
    )


def back_to_training(gap: float, latency: float, threshold: float = 0.0) -> tuple[float, bool]:
    """A fault's time back to training beyond the start-up latency (and, for a hang, beyond
    the hang threshold it takes to tell one), and whether it is within SLACK_S of it."""
    extra = gap - threshold - latency
    return extra, extra <= SLACK_S


def target_lines(
    gaps: Sequence[tuple[str, float]], latency: Latency, hang_after: float = 0.0
) -> list[str]:
    """One line per fault ((label, time back to training)): its excess over the start-up
    latency (and a hang's threshold) and the verdict; a summary line first."""
    med = latency.median
    if med is None:
        return ["start-up latency: - (needs the ideal setup)"]
    lines = [
        f"start-up latency (ideal, {len(latency.samples)} attempt(s)): median {med:.1f}s, "
        f"min {min(latency.samples):.1f}s, max {max(latency.samples):.1f}s"
    ]
    for label, gap in gaps:
        threshold = hang_after if label.startswith("hang") else 0.0
        extra, ok = back_to_training(gap, med, threshold)
        verdict = "ok" if ok else "OVER"
        minus = f" - threshold {threshold:g}s" if threshold else ""
        lines.append(
            f"  {label:<16} to train {gap:.1f}s{minus} - latency = {extra:+.1f}s "
            f"({verdict}, limit +{SLACK_S:.0f}s)"
        )
    return lines
