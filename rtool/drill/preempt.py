"""`rtool drill --preempt` (I/O): the end of a preemption's grace as Slurm does it with
PreemptMode=REQUEUE. The first SIGTERM goes to every task of the job's steps (never the batch
shell: drive.send with a `TERM` non-`B:` signal); a job still running when the grace ends gets
TERM everywhere, KILL KillWait later, and goes back to the queue (`scontrol requeue` does all
three); one that ended inside the grace is not requeued (Slurm records it COMPLETED)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from rtool.core.alert import Status
from rtool.core.proc import ProcError
from rtool.core.slurm import Slurm
from rtool.drill.jobstate import POLL, job_record, over
from rtool.drill.model import Observation, Plan, Step, StepResult

log = logging.getLogger(__name__)
#: Waited for the job to leave RUNNING after the requeue (KillWait and slurmctld's lag).
KILL_BOUND = 90.0


def end_grace(slurm: Slurm, plan: Plan, obs: Observation, say: Callable[[str], None]) -> None:
    """The grace is over and the job still runs: requeue it as Slurm would (or cancel it when
    it cannot be requeued, as Slurm then does), and wait (bounded) until it left RUNNING."""
    t, pre = plan.target, plan.preempt
    assert pre is not None
    say(f"the {pre.grace:.0f}s grace is over and job {t.job_id} still runs: TERM to all and "
        "requeue, as Slurm does (scontrol requeue)")  # fmt: skip
    obs.grace_ended = True
    try:
        slurm.requeue(t.raw_id)
    except ProcError as exc:
        obs.notes.append(f"scontrol requeue failed ({exc}): cancelled it, as Slurm does")
        try:
            slurm.scancel([t.job_id])
        except ProcError as again:
            log.info("scancel %s: %s", t.job_id, again)
    deadline = time.time() + KILL_BOUND
    while time.time() < deadline:
        rec = job_record(slurm, t)
        if over(rec, t):
            obs.slurm_state = (rec or {}).get("JobState") or "gone"
            return
        time.sleep(POLL)
    obs.still_running = True


def grace_text(plan: Plan) -> str:
    """`the 20s grace (GraceTime of partition low)`."""
    pre = plan.preempt
    return f"the {pre.grace:.0f}s grace ({pre.source})" if pre is not None else "the grace"


# -- the verdict of a preemption (pure) ---------------------------------------------------------
def preempt_hint() -> str:
    """What to change when the preemption's SIGTERM never reached the training."""
    return (
        "in the grace Slurm sends SIGTERM only to the tasks of the job's steps, never to the "
        "batch shell: start the training with srun (rtool submit does), with the Guard "
        "(rtool.shim) handling SIGTERM (RTOOL_SIGNALS)"
    )


def more_grace(plan: Plan, took: float) -> str:
    pre = plan.preempt
    name = pre.partition if pre is not None else "?"
    want = max(60, math.ceil(2 * took / 60.0) * 60)
    return (
        f"save faster, or ask the admins for GraceTime={want} (twice the {took:.1f}s it took) "
        f"on partition {name}; rehearse it: rtool drill RUN --preempt --grace {want}"
    )


def grace_step(plan: Plan, obs: Observation, end: float | None) -> StepResult | None:
    """The `lead` step of a preemption: did the training save and exit within the grace?"""
    if obs.signalled_at is None or plan.preempt is None:
        return None
    grace, within = plan.preempt.grace, grace_text(plan)
    if obs.grace_ended:
        if obs.saving_seen_at is None and obs.stop is None:
            return None  # it never began to stop: `reached` says so
        what = "still saving" if obs.stop is None else "saved but had not exited"
        text = f"{what} when {within} ended: Slurm TERMs everything, KILLs it KillWait later"
        last = obs.last.longest_save_seconds if obs.last is not None else None
        took = max(grace, last or 0.0)
        return StepResult(Step.LEAD, Status.CRITICAL, text, more_grace(plan, took))
    if end is None:
        return None
    took = max(0.0, end - obs.signalled_at)
    text = f"exited {took:.1f}s after the SIGTERM: {took / grace:.0%} of {within}"
    if took > grace:
        return StepResult(Step.LEAD, Status.CRITICAL, text, more_grace(plan, took))
    measured = obs.stop.longest_save_seconds if obs.stop is not None else None
    if measured is not None and measured > grace:
        text += f"; but the run's longest measured save took {measured:.1f}s, more than it"
        return StepResult(Step.LEAD, Status.WARNING, text, more_grace(plan, measured))
    if took * 2 > grace:
        text += f", {grace - took:.1f}s to spare: less than twice the time it took"
        return StepResult(Step.LEAD, Status.WARNING, text, more_grace(plan, took))
    return StepResult(Step.LEAD, Status.OK, f"{text} ({grace - took:.1f}s to spare)")


def signal_text(plan: Plan) -> str:
    pre = plan.preempt
    assert pre is not None
    mode = "" if pre.requeues else " (its PreemptMode does not requeue: rehearsed as REQUEUE)"
    return (
        f"SIGTERM sent to every task of job {plan.target.job_id}'s steps, not the batch shell, "
        f"as Slurm does when it preempts it on partition {pre.partition}{mode}: scancel "
        f"--signal=TERM; then {grace_text(plan)}, TERM to all and the requeue"
    )
