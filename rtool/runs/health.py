"""Verdicts on a run's ledger (pure): crash loop, stalled, exhausted, budget, restart storm.
Shared by the run watchdog and the job watchdog (a crash-looping array's pending tasks are not
OK; a finished run is finished)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rtool.core.slurm import QUEUED_STATES, RUNNING_STATES, SqueueJob
from rtool.runs.inplace import InPlaceRestart
from rtool.runs.model import LIMIT_STATES, Attempt, Ledger
from rtool.runs.signatures import NODE_LEVEL


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
    if not a.is_over or a.finished or a.state == "PREEMPTED" or a.stop_reason == "preempted":
        return False  # a preemption is never the training's failure, even before a step
    if a.progress is not None and a.progress == 0:
        return True
    if a.state in LIMIT_STATES or a.state == "NODE_FAIL":
        return False
    if a.stop_reason in ("time_limit", "signal"):
        return False
    if a.state == "COMPLETED" and a.exit_code == 0 and a.progress:
        return False
    kept = kept_steps(a)
    early = a.duration is not None and a.duration < short
    return early and (kept is None or kept <= 0)


def kept_steps(a: Attempt) -> int | None:
    """Steps the attempt kept for the run (None: unknown): none when it saved nothing of its own
    (no save, or its last save before its first step), else its progress less its steps lost.
    Nothing saved is nothing kept, whether or not the steps lost are known yet."""
    if a.progress is None:
        return None
    if a.step_start is not None and (a.last_saved_step is None or a.last_saved_step < a.step_start):
        return 0
    return a.progress - (a.steps_lost or 0)


@dataclass(frozen=True)
class Try:
    """One launch of the training that ended: an attempt's last launch (`restart` None), or a
    launch the batch script restarted in place (`restart`: that restart)."""

    attempt: Attempt
    restart: InPlaceRestart | None
    ended: float
    bad: bool

    @property
    def number(self) -> int:
        return self.attempt.number

    @property
    def label(self) -> str:
        if self.restart is None:
            return f"attempt {self.attempt.number}"
        return f"attempt {self.attempt.number} launch {self.restart.launch - 1}"


def bad_restart(r: InPlaceRestart, short: float) -> bool:
    """A launch restarted in place that made no progress, or that died within `short` of its
    start without saving a step (a launch that never made a guard: bad)."""
    if r.progress == 0:
        return True
    if r.process_started is None:
        return r.progress is None
    early = r.time - r.process_started < short
    saved = (
        r.last_saved_step is not None
        and r.process_start_step is not None
        and r.last_saved_step >= r.process_start_step
    )
    return early and not saved


def tries(ledger: Ledger, short: float) -> list[Try]:
    """Every launch that ended, in the order they ended."""
    out = []
    for a in ledger.attempts:
        restarts = ledger.restarts_of(a)
        out += [Try(a, r, r.time, bad_restart(r, short)) for r in restarts]
        if not a.is_over:
            continue
        last = a
        if restarts:  # judge the attempt's last launch: from its restart on
            r = restarts[-1]
            end = a.step_end if r.resumed_step is not None else None
            last = a.with_(started=r.time, step_start=r.resumed_step, step_end=end)
        out.append(Try(a, None, a.ended or a.started or 0.0, bad_attempt(last, short)))
    return sorted(out, key=lambda t: t.ended)


#: Root causes that are Slurm's decision, not a crash: never a loop by themselves.
NOT_CRASHES = frozenset(
    {"timeout", "preempted", "deadline", "slurm-time-limit", "slurm-preempted", "slurm-cancelled"}
)


def shared_cause(attempts: Sequence[Attempt]) -> str | None:
    """What the ended `attempts` (two or more) all died of, when it is one root cause (their
    signatures' name and label, whatever follower lines each printed): the checkpoint every
    launch failed to load, or a node-level fault on one node, or the cause."""
    sigs = [a.signature for a in attempts]
    first = sigs[0] if len(sigs) >= 2 else None
    if first is None or first.name in NOT_CRASHES:
        return None
    if any(s is None or (s.name, s.label) != (first.name, first.label) for s in sigs):
        return None
    if first.checkpoint and all(s is not None and s.checkpoint == first.checkpoint for s in sigs):
        last = f" (last complete: {first.last_complete})" if first.last_complete else ""
        return f"every launch dies loading {first.checkpoint}{last}"
    nodes = {s.node if s is not None else None for s in sigs}
    if first.name in NODE_LEVEL and len(nodes) == 1 and first.node:
        return f"every launch died of {first.label} on node {first.node}"
    return f"every launch died of {first.label}"


def crash_loop(ledger: Ledger, k: int, short: float) -> list[Try] | None:
    """The last `k` launches that ended (attempts and in-place restarts) when all of them are
    bad, or all died of the same root cause (k >= 2), else None."""
    if ledger.finished or k < 1:
        return None
    tail = tries(ledger, short)[-k:]
    if len(tail) < k:
        return None
    same = all(t.restart is None for t in tail) and shared_cause([t.attempt for t in tail])
    if all(t.bad for t in tail) or (k >= 2 and same):
        return tail
    return None


def no_progress(ledger: Ledger, n: int | None) -> tuple[int, list[str]] | None:
    """(step, launches) when the last `n` launches (attempts and in-place restarts, each known
    by the step it resumed at) all resumed at the same step: no checkpoint in between."""
    if ledger.finished or n is None or n < 2:
        return None
    starts: list[tuple[float, int, str]] = []
    for a in ledger.attempts:
        if a.step_start is not None and a.started is not None:
            starts.append((a.started, a.step_start, f"attempt {a.number}"))
        for r in ledger.restarts_of(a):
            if r.resumed_step is not None:
                label = f"attempt {a.number} launch {r.launch}"
                starts.append((r.time, r.resumed_step, label))
    tail = sorted(starts)[-n:]
    if len(tail) < n or len({step for _, step, _ in tail}) != 1:
        return None
    return tail[0][1], [label for _, _, label in tail]


def stalled_for(ledger: Ledger, queue: Queue, now: float) -> float | None:
    """How long the highest step has not grown while attempts keep running (None: not)."""
    if ledger.finished or not queue.running or ledger.best_step_at is None:
        return None
    return max(0.0, now - ledger.best_step_at)


def exhausted(ledger: Ledger, queue: Queue) -> bool:
    """Every attempt ended, none is queued, and the run never called finished()."""
    return bool(ledger.attempts) and not ledger.finished and not (queue.running or queue.pending)


def budget_short(ledger: Ledger, queue: Queue) -> tuple[int, float] | None:
    """(steps needed, steps the remaining attempts can give) when they cannot finish the run."""
    if ledger.finished or ledger.total_steps is None or ledger.best_step is None:
        return None
    ended = [a for a in ledger.attempts if a.is_over and a.progress is not None]
    if not ended:
        return None
    rate = sum((a.progress or 0) - (a.steps_lost or 0) for a in ended) / len(ended)
    needed = ledger.total_steps - ledger.best_step
    remaining = len(queue.running) + queue.pending_count
    can = remaining * max(rate, 0.0)
    return (needed, can) if needed > 0 and can < needed else None


def attempts_within(ledger: Ledger, now: float, window: float = 3600.0) -> int:
    """Attempts started, and in-place restarts made, within `window` of `now`."""
    started = sum(1 for a in ledger.attempts if a.started is not None and now - a.started <= window)
    return started + sum(1 for r in ledger.restarts if now - r.time <= window)
