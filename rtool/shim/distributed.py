"""Agreement of all ranks when torch.distributed is initialised (docs/shim.md).

One all-reduce MAX of a small int64 tensor, every `interval` steps on every rank, combines the
stop/save flags (so all ranks act at the same step), the next interval (the smallest proposed)
and each rank's step time (its own slot; the wait in the agreement left out), so rank 0 knows
the slowest rank, its node and its lag without a collective of its own. torch is imported only
here, and only once the caller found torch.distributed imported and initialised.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from rtool.shim.hang import node_name
from rtool.shim.options import GuardOptions, ShimConfigError
from rtool.shim.report import Reporter
from rtool.shim.state import Loop, MonitorConfig

#: Number of flag bits exchanged (see rtool.shim's F_* constants).
FLAG_BITS = 8
#: Largest number of steps between two agreements in "auto" mode.
MAX_INTERVAL = 10_000


def initialised_dist() -> Any | None:
    """`torch.distributed` when the user already imported and initialised it, else None."""
    import sys

    mod = sys.modules.get("torch.distributed")
    try:
        return mod if mod is not None and mod.is_available() and mod.is_initialized() else None
    except Exception:
        return None


def detect(
    opts: GuardOptions, loop: Loop, report: Reporter, config: MonitorConfig
) -> Agreement | None:
    """The ranks' Agreement when torch.distributed is initialised (and not turned off); the
    rank it gives goes into `loop` and the heartbeat, its latency into the auto margin."""
    dist = initialised_dist() if opts.distributed is not False else None
    if dist is not None:
        agreement = Agreement(dist, opts.sync_every, opts.sync_seconds)
        loop.rank = agreement.rank
        report.set_rank(agreement.rank, agreement.world)
        if opts.sync_every is None:
            config.extra_latency = opts.sync_seconds
        return agreement
    if opts.distributed:
        raise ShimConfigError(
            "rtool.shim: distributed=True but torch.distributed is not initialised"
        )
    return None


class Agreement:
    """All-reduce of the flags; `fixed` steps between calls, or adaptive (`sync_seconds`)."""

    def __init__(self, dist: Any, fixed: int | None, sync_seconds: float) -> None:
        import torch

        self.torch = torch
        self.dist = dist
        self.fixed = fixed
        self.sync_seconds = sync_seconds
        self.rank: int = dist.get_rank()
        self.world: int = dist.get_world_size()
        backend = str(dist.get_backend()).lower()
        if backend == "nccl" and torch.cuda.is_available():
            self.device = torch.device("cuda", torch.cuda.current_device())
        else:
            self.device = torch.device("cpu")
        self._last: float | None = None
        self.interval = 1  # steps from the last agreement to the next (the one agreed then)
        self._left: float | None = None  # when the last agreement returned
        self.step_times: list[float] = []  # each rank's, from the last agreement (seconds)
        self.nodes: list[str] = [""] * self.world
        dist.all_gather_object(self.nodes, node_name())  # once, at the first step

    def slowest(self) -> dict[str, Any]:
        """The heartbeat's `slowest_rank`, `slowest_node`, `slowest_lag` (its step time over
        the ranks' median, minus 1) and `slowest_seconds` (its step time: the run's pace);
        empty until every rank reported a step time."""
        times = self.step_times
        if len(times) < 2 or min(times) <= 0:
            return {}
        rank = max(range(len(times)), key=lambda r: times[r])
        lag = times[rank] / statistics.median(times) - 1
        return {
            "slowest_rank": rank,
            "slowest_node": self.nodes[rank],
            "slowest_lag": lag,
            "slowest_seconds": times[rank],
        }

    def propose(self, steps_since: int, now: float) -> int:
        """Steps until the next agreement: fixed, or about `sync_seconds` worth of steps."""
        if self.fixed is not None:
            return self.fixed
        last, self._last = self._last, now
        if last is None or steps_since <= 0:
            return 1
        per_step = (now - last) / steps_since
        if per_step <= 0:
            return MAX_INTERVAL
        return max(1, min(MAX_INTERVAL, math.floor(self.sync_seconds / per_step)))

    def agree(self, flags: int, urgent: bool = False) -> tuple[int, int]:
        """(flags OR-ed over all ranks, agreed next interval = the smallest proposal), called
        every `interval` steps; `urgent` (the stop time is near): agree again at the next step."""
        steps_since = self.interval
        proposal = self.propose(steps_since, time.monotonic())
        if urgent:
            proposal = 1
        now = time.monotonic()
        busy = (now - self._left) / steps_since if self._left and steps_since > 0 else 0.0
        mine = [0] * self.world
        mine[self.rank] = int(busy * 1e6)  # microseconds; the others' slots stay 0 (MAX)
        values = [(flags >> i) & 1 for i in range(FLAG_BITS)] + [-proposal] + mine
        t = self.torch.tensor(values, dtype=self.torch.int64, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        self._left = time.monotonic()
        out = [int(v) for v in t.tolist()]
        self.step_times = [v / 1e6 for v in out[FLAG_BITS + 1 :]]
        agreed = sum(1 << i for i in range(FLAG_BITS) if out[i])
        self.interval = max(1, -out[FLAG_BITS])
        return agreed, self.interval
