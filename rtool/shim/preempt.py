"""A stop while Slurm preempts the job: its save bound and its detail (rtool.shim.stopping).

The save of a preempted job may take what is left of the partition's GraceTime when that is
shorter than `save_timeout` (docs/shim.md); the log says so, with the longest save measured.
"""

from __future__ import annotations

import logging
import time

from rtool.shim.slurm import Preemption

log = logging.getLogger("rtool.shim")


def save_bound(p: Preemption, save_timeout: float, measured: float) -> float:
    """Seconds the stop's save may take (the forced exit's timeout), said in the log."""
    left = p.left(time.time())
    grace = f"partition {p.partition or '?'}, GraceTime {p.grace:g}s"
    seen = f"; the longest save measured took {measured:.1f}s" if measured else ""
    if left is None or (save_timeout > 0 and left >= save_timeout):
        log.warning(
            "rtool.shim: Slurm is preempting this job (%s): the save is bounded by "
            "save_timeout %gs%s",
            grace,
            save_timeout,
            seen,
        )
        return save_timeout
    log.warning(
        "rtool.shim: Slurm is preempting this job (%s): the save has the %.1fs left of the grace%s",
        grace,
        left,
        seen,
    )
    if measured > left:
        log.warning(
            "rtool.shim: the save (%.1fs) is longer than the grace left (%.1fs): ask for a "
            "longer GraceTime or save more often (save_every)",
            measured,
            left,
        )
    return max(1.0, left)


def detail(signal: str | None, p: Preemption) -> str:
    """The stop's detail: `SIGTERM while Slurm preempts the job (since 15:35:05, ...)`."""
    sig = signal or "a signal seen on another rank"
    when = time.strftime("%H:%M:%S", time.localtime(p.at))
    grace = f"partition {p.partition or '?'}, GraceTime {p.grace:g}s"
    return f"{sig} while Slurm preempts the job (since {when}, {grace})"
