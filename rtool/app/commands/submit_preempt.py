"""`rtool submit`'s preemption warning: the run's measured save against the partition's grace.

On a preemptible partition (PreemptMode REQUEUE or CANCEL) Slurm gives a preempted job
`GraceTime` seconds after the first SIGTERM (docs/submit.md, "Preemption"); a save that takes
longer is cut short and the attempt's progress since the last checkpoint is lost. The save is
the longest one measured by earlier attempts (their heartbeat, read only when it is yours).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rtool.core.errors import RtoolError
from rtool.core.slurm.parse import ParseError
from rtool.core.slurm.partition import Partition, partition
from rtool.runs.attempt_record_writer import read_own_heartbeat

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext
    from rtool.slurm_templates.training import TrainingJob


def save_vs_grace(save_s: float | None, part: Partition | None) -> str | None:
    """The warning when the measured save does not fit in a preemptible partition's grace."""
    if save_s is None or part is None or part.preempt_mode.upper() in ("OFF", "SUSPEND"):
        return None
    if part.grace > 0 and save_s <= part.grace:
        return None
    grace = f"GraceTime {part.grace:g}s" if part.grace > 0 else "GraceTime 0 (only KillWait)"
    return (
        f"the run's measured save ({save_s:.1f}s, from earlier attempts) is longer than "
        f"partition {part.name}'s {grace}: a preemption would cut it short and lose the "
        "steps since the last checkpoint; save faster or more often (save_every), or submit "
        "to a partition with a longer GraceTime"
    )


def preempt_warning(app_ctx: AppContext, job: TrainingJob) -> str | None:
    """The warning for this submission, or None (also when Slurm cannot say)."""

    hb = read_own_heartbeat(job.heartbeat) if job.heartbeat else None  # yours only
    save_s = hb.longest_save_seconds if hb is not None else None  # the longest save recorded
    if save_s is None:
        return None
    try:
        part = partition(app_ctx.slurm, job.partition)
    except (RtoolError, ParseError):
        return None
    return save_vs_grace(save_s, part)
