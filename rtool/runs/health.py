"""Verdicts on a run's ledger (pure): crash loop, stalled, exhausted, budget, restart storm.
Shared by the run watchdog and the job watchdog (a crash-looping array's pending tasks are not
OK; a finished run is finished)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rtool.core.slurm import QUEUED_STATES, RUNNING_STATES, SqueueJob
from rtool.runs.model import LIMIT_STATES, Attempt, Ledger


@dataclass(frozen=True)
class Queue:
    """The run's jobs in squeue now."""

    running: tuple[SqueueJob, ...]
    pending: tuple[SqueueJob, ...]

    @staticmethod
    def of(jobs: Sequence[SqueueJob]) -> Queue:
        return Queue(
            tuple(j for j in jobs if j.state in RUNNING_STATES),
            tuple(j for j in jobs if j.state in QUEUED_STATES),
        )

    @property
    def active(self) -> bool:
        return bool(self.running or self.pending)

    @property
    def pending_count(self) -> int:
        return sum(j.tasks for j in self.pending)

    def hold_targets(self) -> list[str]:
        """What `scontrol hold` takes to hold the rest: an array's id, or each pending job."""
        out = []
        for j in self.pending:
            target = j.array_job_id if j.pending_tasks else j.job_id
            if target not in out and re.fullmatch(r"\d+(_\d+)?", target):
                out.append(target)
        return out


def bad_attempt(a: Attempt, short: float) -> bool:
    """An ended attempt that made no progress, or that the training itself ended (not a time
    limit, preemption or node failure) within `short` of starting without keeping a step."""
    if not a.is_over or a.finished:
        return False
    if a.progress is not None and a.progress == 0:
        return True
    if a.state in LIMIT_STATES or a.state == "NODE_FAIL":
        return False
    if a.stop_reason in ("time_limit", "signal"):
        return False
    if a.state == "COMPLETED" and a.exit_code == 0 and a.progress:
        return False
    kept = None if a.progress is None else a.progress - (a.steps_lost or 0)
    early = a.duration is not None and a.duration < short
    return early and (kept is None or kept <= 0)


def crash_loop(ledger: Ledger, k: int, short: float) -> list[Attempt] | None:
    """The last `k` ended attempts when all of them are bad, else None."""
    if ledger.finished or k < 1:
        return None
    ended = [a for a in ledger.attempts if a.is_over]
    tail = ended[-k:]
    if len(tail) < k or not all(bad_attempt(a, short) for a in tail):
        return None
    return tail


def stalled_for(ledger: Ledger, queue: Queue, now: float) -> float | None:
    """How long the highest step has not grown while attempts keep running (None: not)."""
    if ledger.finished or not queue.running or ledger.best_step_at is None:
        return None
    return max(0.0, now - ledger.best_step_at)


def exhausted(ledger: Ledger, queue: Queue) -> bool:
    """Every attempt ended, none is queued, and the run never called finished()."""
    return bool(ledger.attempts) and not ledger.finished and not queue.active


def mean_progress(ledger: Ledger) -> float | None:
    kept = [
        a.progress - (a.steps_lost or 0)
        for a in ledger.attempts
        if a.is_over and a.progress is not None
    ]
    return sum(kept) / len(kept) if kept else None


def budget_short(ledger: Ledger, queue: Queue) -> tuple[int, float] | None:
    """(steps needed, steps the remaining attempts can give) when they cannot finish the run."""
    if ledger.finished or ledger.total_steps is None or ledger.best_step is None:
        return None
    rate = mean_progress(ledger)
    if rate is None:
        return None
    needed = ledger.total_steps - ledger.best_step
    remaining = len(queue.running) + queue.pending_count
    can = remaining * max(rate, 0.0)
    return (needed, can) if needed > 0 and can < needed else None


def attempts_within(ledger: Ledger, now: float, window: float = 3600.0) -> int:
    return sum(1 for a in ledger.attempts if a.started is not None and now - a.started <= window)
