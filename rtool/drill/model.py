"""The drill's records: what is drilled (the plan), what was seen, and the verdict per step."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from rtool.core.alert import Status, worst
from rtool.core.heartbeat import Heartbeat
from rtool.drill.script import ScriptFacts
from rtool.slurm_templates.specs import SignalSpec


class Step(str, enum.Enum):
    """The stop path, in order: each step needs the ones before it."""

    SIGNAL = "signal"  # the --signal Slurm would send, sent the way Slurm sends it
    REACHED = "reached"  # the training saw it and began to stop
    SAVE = "save"  # the save on the way out started and finished
    LEAD = "lead"  # ... within the lead time (or before the job's end)
    EXIT = "exit"  # the process exited with the stop code (85: requeue me)
    REQUEUE = "requeue"  # a next attempt is queued (requeue, next array task, chained job)
    RESUME = "resume"  # the next attempt started at the saved step + 1


class Mode(str, enum.Enum):
    """What continues the run after a stop."""

    AUTO_REQUEUE = "auto-requeue"  # the batch script requeues the job on the stop code
    ARRAY = "array"  # the next task of the array
    CHAIN = "queued job"  # another queued job of the run (--after-name)
    NONE = "nothing"


@dataclass(frozen=True)
class Target:
    """The running attempt that is drilled."""

    run: str
    job_name: str
    job_id: str  # as squeue shows it: 88_3 or 90
    raw_id: str  # Slurm's own number (what scancel and scontrol take)
    restart: int = 0
    array_job_id: str | None = None
    nodes: tuple[str, ...] = ()
    end_time: float | None = None  # EndTime: when Slurm ends it (None: no limit)
    workdir: str | None = None  # WorkDir: where relative paths of its script point
    partition: str | None = None  # Partition: where a preemption's grace is read


@dataclass(frozen=True)
class Preempt:
    """`rtool drill --preempt`: a preemption as Slurm does it on the job's partition (SIGTERM to
    every task, the grace, then TERM to all and the requeue, PreemptMode=REQUEUE)."""

    partition: str
    grace: float  # seconds between the first SIGTERM and the final TERM/KILL
    source: str  # where the grace comes from ("GraceTime of partition low", "--grace")
    requeues: bool = True  # the partition's PreemptMode requeues


@dataclass(frozen=True)
class Plan:
    target: Target
    signal: SignalSpec | None
    facts: ScriptFacts
    heartbeat: str | None
    records: str | None  # the batch script's attempt records (<heartbeat>.attempts)
    mode: Mode
    expected_code: int  # the stop's exit code: 85 with auto-requeue below its bound, else 0
    next_job: str | None = None  # the queued attempt that continues the run (array, chain)
    no_requeue: bool = False  # do not wait for the next attempt (check that one is queued)
    start_timeout: float = 600.0  # for the training to take its first step
    resume_timeout: float = 600.0  # for the next attempt to take its first step
    signal_given: bool = False  # --signal given to the drill (not read from the script)
    throwaway: bool = False  # a job of the drill's own (--submit): drilled even with no requeue
    preempt: Preempt | None = None  # rehearse a preemption (the signal: TERM to the tasks)

    @property
    def lead(self) -> int | None:
        return self.signal.lead if self.signal is not None else None


@dataclass
class Observation:
    """What the drill saw, with the times (epoch seconds) it saw them."""

    ready: Heartbeat | None = None  # the heartbeat of the drilled attempt before the signal
    not_ready: str | None = None  # why the drill never signalled
    signalled_at: float | None = None
    signal_error: str | None = None
    deadline_mode: bool = False  # the end was near: the shim trains on to the deadline
    stop: Heartbeat | None = None  # the drilled attempt's heartbeat as it stopped
    saving_seen_at: float | None = None  # a heartbeat `saving` seen (the save began)
    last: Heartbeat | None = None  # the newest heartbeat of the drilled attempt seen
    ended_at: float | None = None  # the training process exited (records, else seen)
    still_running: bool = False  # the attempt had not ended when the drill gave up
    gave_up_at: float | None = None  # ... at this time
    exit_code: int | None = None  # the training's (the batch script's record), else Slurm's
    exit_signal: int | None = None  # the training's process was killed by it (exit 128+N)
    shell_signal: int | None = None  # the batch shell died of it (Slurm's ExitCode 0:N)
    grace_ended: bool = False  # --preempt: still running at the grace's end: TERM all, requeue
    slurm_state: str | None = None  # the attempt's Slurm state after it ended
    requeued: bool | None = None  # the same job back in the queue (auto-requeue)
    next_job: str | None = None  # the attempt that continues the run (queued or running)
    next_reason: str | None = None  # why it is still pending
    resumed: Heartbeat | None = None  # the next attempt's heartbeat once it took a step
    notes: list[str] = field(default_factory=list)

    @property
    def sent(self) -> bool:
        """The signal went out (the later steps can be judged)."""
        return (
            self.signalled_at is not None and self.signal_error is None and self.not_ready is None
        )


@dataclass(frozen=True)
class StepResult:
    """One step's verdict: `status` None when it was not reached (an earlier step broke)."""

    step: Step
    status: Status | None
    text: str
    fix: str = ""

    def line(self) -> str:
        label = self.status.name if self.status is not None else "-"
        fix = f" -> {self.fix}" if self.fix else ""
        return f"  {self.step.value:<8} {label:<8} {self.text}{fix}"


@dataclass
class Report:
    plan: Plan | None
    steps: list[StepResult]
    headline: str
    observation: Observation | None = None

    @property
    def status(self) -> Status:
        seen = [s.status for s in self.steps if s.status is not None]
        return worst(seen) if seen else Status.UNKNOWN

    def broken(self) -> StepResult | None:
        """The first step that is not OK (the one the headline names)."""
        return next((s for s in self.steps if s.status not in (Status.OK, None)), None)

    def lines(self) -> list[str]:
        notes = [f"  note: {n}" for n in (self.observation.notes if self.observation else [])]
        head = f"DRILL {self.status.name} - {self.headline}"
        return [head, *(s.line() for s in self.steps), *notes]

    def to_json(self) -> dict[str, Any]:
        t = self.plan.target if self.plan is not None else None
        return {
            "status": self.status.name,
            "code": int(self.status),
            "summary": self.headline,
            "run": t.run if t else None,
            "job_id": t.job_id if t else None,
            "signal": self.plan.signal.sbatch() if self.plan and self.plan.signal else None,
            "steps": [
                {
                    "step": s.step.value,
                    "status": s.status.name if s.status is not None else None,
                    "text": s.text,
                    "fix": s.fix or None,
                }
                for s in self.steps
            ],
        }
