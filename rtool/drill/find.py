"""Which attempt to drill and how its stop path is set up (I/O: squeue, scontrol).

The target is the run's running job (your own: squeue is scoped to you, and every action
re-checks the owner). Its stop path comes from the batch script the job really runs (the
`--signal`, the shim's variables), what continues the run from the queue (the array's next
task, the job's own requeue, another queued job of the run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rtool.core.errors import RtoolError
from rtool.core.identity import is_mine
from rtool.core.proc import ProcError
from rtool.core.slurm import RUNNING_STATES, Slurm, SqueueJob, parse_slurm_timestamp
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.core.slurm.partition import partition
from rtool.drill.drive import drive
from rtool.drill.model import Mode, Plan, Preempt, Report, Target
from rtool.drill.script import ScriptFacts, read_script
from rtool.drill.verdict import judge
from rtool.runs.attempt_records import records_path
from rtool.slurm_templates.specs import SignalSpec


class DrillError(RtoolError):
    """The drill cannot start (no running attempt, several, no heartbeat...): UNKNOWN."""


@dataclass(frozen=True)
class Wanted:
    """What the command line asks for."""

    run: str
    job_name: str
    job: str | None = None  # a job id, when the run has several running jobs
    signal: SignalSpec | None = None  # overrides the script's
    heartbeat: str | None = None  # overrides the script's
    no_requeue: bool = False
    start_timeout: float = 600.0
    resume_timeout: float = 600.0
    throwaway: bool = False
    preempt: bool = False  # rehearse a preemption instead of the time limit's --signal
    grace: float | None = None  # the preemption's grace (default: the partition's GraceTime)


def _running(slurm: Slurm, want: Wanted) -> SqueueJob:
    """The run's running job; one that is still queued is waited for (start timeout)."""
    deadline = time.time() + want.start_timeout
    while True:
        jobs = [j for j in slurm.squeue(names=[want.job_name]) if is_mine(j.user)]
        if want.job:
            jobs = [j for j in jobs if want.job in (j.job_id, j.array_job_id)]
        running = [j for j in jobs if j.state in RUNNING_STATES]
        if len(running) == 1:
            return running[0]
        if running:
            ids = ", ".join(j.job_id for j in running)
            raise DrillError(
                f"run {want.run} has several running jobs ({ids}): pick one with --job"
            )
        queued = [j for j in jobs if j.state not in RUNNING_STATES]
        if not queued or time.time() > deadline:
            why = (
                f" ({queued[0].job_id} is {queued[0].state}: {queued[0].reason})" if queued else ""
            )
            raise DrillError(f"run {want.run} has no running job named {want.job_name}{why}")
        time.sleep(1.0)


def find_target(slurm: Slurm, want: Wanted) -> Target:
    """The running attempt to drill (DrillError when there is none, or several)."""
    job = _running(slurm, want)
    records = slurm.show_job(job.job_id)
    if not records:
        raise DrillError(f"job {job.job_id} left the queue")
    rec = records[0]
    try:
        end = parse_slurm_timestamp(rec.get("EndTime", ""))
        nodes = tuple(expand_hostlist(rec.get("NodeList", "")))
    except ParseError as exc:
        raise DrillError(f"job {job.job_id}: {exc}") from None
    restarts = rec.get("Restarts", "0")
    return Target(
        run=want.run,
        job_name=want.job_name,
        job_id=job.job_id,
        raw_id=rec.get("JobId", job.job_id),
        restart=int(restarts) if restarts.isdigit() else 0,
        array_job_id=job.array_job_id if job.is_array else None,
        nodes=nodes,
        end_time=end.timestamp() if end is not None and job.time_limit is not None else None,
        workdir=rec.get("WorkDir") or None,
        partition=rec.get("Partition") or None,
    )


def continuation(slurm: Slurm, target: Target, facts: ScriptFacts) -> tuple[Mode, str | None]:
    """What continues the run after a stop, and the queued job that will (if one is)."""
    if facts.auto_requeue:
        bound = facts.max_requeues
        if bound is None or target.restart < bound:
            return Mode.AUTO_REQUEUE, target.job_id
        return Mode.NONE, None  # its requeues are used up
    queued = [
        j
        for j in slurm.squeue(names=[target.job_name], states="PENDING")
        if is_mine(j.user) and j.job_id != target.job_id
    ]
    if target.array_job_id is not None:
        task = next((j for j in queued if j.array_job_id == target.array_job_id), None)
        if task is not None:
            return Mode.ARRAY, task.job_id
    others = [j for j in queued if j.array_job_id != target.array_job_id]
    if others:
        return Mode.CHAIN, others[0].job_id
    return Mode.NONE, None


def make_plan(slurm: Slurm, target: Target, want: Wanted) -> Plan:
    """The stop path of the target, read from its batch script and the queue."""
    facts = read_script(slurm.scontrol("write", "batch_script", target.raw_id, "-"))
    heartbeat = want.heartbeat or facts.heartbeat
    if heartbeat and not want.heartbeat and target.workdir and not os.path.isabs(heartbeat):
        heartbeat = os.path.join(target.workdir, heartbeat)  # the job's, not ours
    if not heartbeat:
        raise DrillError(
            f"job {target.job_id} writes no heartbeat the drill can read: give --heartbeat "
            "(the shim's RTOOL_HEARTBEAT; rtool submit --heartbeat sets it)"
        )
    heartbeat = os.path.expanduser(heartbeat)
    mode, next_job = continuation(slurm, target, facts)
    expected = facts.requeue_exit_code if mode is Mode.AUTO_REQUEUE else 0
    preempt = preemption(slurm, target, want.grace) if want.preempt else None
    signal = want.signal or facts.signal
    if preempt is not None:  # what Slurm sends a preempted job's tasks, the grace as its lead
        signal = SignalSpec(name="TERM", lead=max(1, round(preempt.grace)), batch=False)
    return Plan(
        target=target,
        signal=signal,
        facts=facts,
        heartbeat=heartbeat,
        records=records_path(heartbeat, facts.records),
        mode=mode,
        expected_code=expected,
        next_job=next_job,
        no_requeue=want.no_requeue,
        start_timeout=want.start_timeout,
        resume_timeout=want.resume_timeout,
        signal_given=want.signal is not None,
        throwaway=want.throwaway,
        preempt=preempt,
    )


def preemption(slurm: Slurm, target: Target, grace: float | None) -> Preempt:
    """How the job's partition preempts it: its GraceTime (`--grace` overrides it; GraceTime 0
    means TERM to everything at once and KILL after KillWait: that is the time to save)."""
    try:
        part = partition(slurm, target.partition)
    except (ProcError, ParseError) as exc:
        raise DrillError(f"scontrol show partition: {exc}") from None
    name = part.name if part is not None else (target.partition or "?")
    requeues = part.requeues if part is not None else True
    if grace is not None:
        return Preempt(name, grace, "--grace", requeues)
    if part is not None and part.grace > 0:
        return Preempt(name, part.grace, f"GraceTime of partition {name}", requeues)
    try:
        wait = slurm.show_config().get("KillWait", "")
    except ProcError as exc:
        raise DrillError(f"scontrol show config: {exc}") from None
    digits = wait.split()[0] if wait.split() else ""
    if not digits.isdigit():
        raise DrillError(f"partition {name} has GraceTime 0 and KillWait is {wait!r}: give --grace")
    source = f"KillWait (partition {name} has GraceTime 0: TERM to all, KILL after KillWait)"
    return Preempt(name, float(digits), source, requeues)


def drill(slurm: Slurm, want: Wanted, say: Callable[[str], None]) -> Report:
    """Find the attempt, read its stop path, drill it, judge it."""
    plan = make_plan(slurm, find_target(slurm, want), want)
    return judge(plan, drive(slurm, plan, say))
