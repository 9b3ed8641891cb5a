"""The short history of step times that rank 0's heartbeat carries (docs/guide/stragglers.md).

At each agreement of the ranks the guard learns the run's step time (the slowest rank's: the
others wait for it), which rank was slowest, its node and its lag. Kept, bounded (about 2.5 KB):
`recent`, this process's last RECENT agreements, and `baseline`, the run's steady step times
across attempts, thinned evenly to at most BASELINE values. The first WARMUP agreements of each
process (start-up, compilation) are in neither. Standard library only.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rtool.core.heartbeat import Heartbeat, StepSample

RECENT = 30
BASELINE = 64
WARMUP = 3


class StepLog:
    """The recent agreements and the run's thinned steady step times."""

    def __init__(self) -> None:
        self.recent: deque[StepSample] = deque(maxlen=RECENT)
        self.baseline: list[float] = []
        self.stride = 1
        self.seen = 0  # agreements of this process with a step time

    def carry(self, prev: Heartbeat) -> None:
        """The previous attempt's baseline (the same run)."""
        self.baseline = [x for x in prev.step_baseline if x > 0][-BASELINE:]
        self.stride = max(1, prev.step_baseline_stride)

    def add(self, slowest: dict[str, Any]) -> None:
        """One agreement's `slowest_*` fields (nothing when no step time was known)."""
        seconds = slowest.get("slowest_seconds")
        if not isinstance(seconds, (int, float)) or seconds <= 0:
            return
        self.seen += 1
        if self.seen <= WARMUP:
            return
        lag = slowest.get("slowest_lag")
        sample = StepSample(
            round(float(seconds), 6),
            slowest.get("slowest_rank"),
            slowest.get("slowest_node"),
            round(float(lag), 4) if isinstance(lag, (int, float)) else None,
        )
        self.recent.append(sample)
        if (self.seen - WARMUP) % self.stride == 0:
            self.baseline.append(sample.seconds)
            if len(self.baseline) > BASELINE:
                self.baseline = self.baseline[1::2]
                self.stride *= 2

    def fields(self) -> dict[str, Any]:
        if not self.recent and not self.baseline:
            return {}
        return {
            "step_recent": tuple(self.recent),
            "step_baseline": tuple(round(x, 6) for x in self.baseline),
            "step_baseline_stride": self.stride,
        }
