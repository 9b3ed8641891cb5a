"""Where a run's time went, by cause: how each attempt ended, the steps it lost (done again by
the next one) and the wait until the next attempt started. Pure; read by the timeline page.

Causes come from the ledger alone: Slurm's final state, the shim's stop reason and the failure
signature. A hang is an attempt the shim stopped as unresponsive, or one requeued while it ran
(rtool's `--on-hang requeue`, or a person) without the shim's own stop.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rtool.runs.model import Attempt, Ledger, Totals
from rtool.runs.totals import ends


class Cause(str, enum.Enum):
    """How an attempt ended (its colour and mark on the timeline)."""

    FINISHED = "finished"
    RUNNING = "running"
    PENDING = "pending"
    TIME_LIMIT = "time limit"
    PREEMPTED = "preempted"
    NODE_FAILURE = "node failure"
    HANG = "hang"
    CRASH = "crash"
    CANCELLED = "cancelled"
    ENDED = "ended"  # nothing says why (degraded mode without an end record)


_NODE_SIGNATURES = frozenset({"node-fail", "boot-fail"})
_HANG_STOPS = frozenset({"unresponsive", "hang"})


def cause_of(a: Attempt) -> Cause:
    """The cause of an attempt's end; an attempt that has not ended is running or pending."""
    if not a.is_over:
        return Cause.PENDING if a.state == "PENDING" or a.started is None else Cause.RUNNING
    stop = a.stop_reason or ""
    sig = a.signature.name if a.signature else ""
    if a.finished:
        return Cause.FINISHED
    if stop == "time_limit" or a.state in ("TIMEOUT", "DEADLINE"):
        return Cause.TIME_LIMIT
    if a.state == "PREEMPTED" or stop == "preempted":
        return Cause.PREEMPTED
    if a.state in ("NODE_FAIL", "BOOT_FAIL") or sig in _NODE_SIGNATURES:
        return Cause.NODE_FAILURE
    if stop in _HANG_STOPS or (a.state == "REQUEUED" and not stop):
        return Cause.HANG
    if a.state == "CANCELLED" and not a.error:
        return Cause.CANCELLED
    failed = a.state in ("FAILED", "OUT_OF_MEMORY") or bool(a.error) or stop == "crashed"
    if failed or bool(a.signal) or (a.exit_code or 0) != 0:
        return Cause.CRASH
    return Cause.FINISHED if a.state == "COMPLETED" and stop == "" else Cause.ENDED


@dataclass(frozen=True)
class Loss:
    """Time a run lost to one cause."""

    cause: Cause
    attempts: int
    steps_lost: int
    redone_s: float  # the steps lost, at the run's step time (computing spent again)
    waiting_s: float  # from each such end to the start of the attempt after it
    stalled_s: float = 0.0  # a hang: its time without progress (ran minus steps x step time)

    @property
    def total_s(self) -> float:
        return self.redone_s + self.waiting_s + self.stalled_s


@dataclass(frozen=True)
class Breakdown:
    """The run's time: useful computing, what each cause cost, and what is left over."""

    useful_s: float  # steps gained x step time
    losses: list[Loss]
    overhead_s: float  # computing neither useful nor redone: start-up, saves, idle steps
    step_seconds: float | None


def breakdown(ledger: Ledger, tot: Totals, now: float) -> Breakdown:
    """Losses by cause (largest first), from the attempts in start order and the compacted
    ones' tallies (every attempt, as the totals)."""
    ended = ends(ledger, now)
    step = tot.step_seconds or 0.0
    by: dict[Cause, list[float]] = {}
    atts = ledger.attempts
    for i, a in enumerate(atts):
        cause = cause_of(a)
        if cause in (Cause.RUNNING, Cause.PENDING, Cause.FINISHED):
            continue
        nxt = atts[i + 1] if i + 1 < len(atts) else None
        wait = 0.0
        if nxt is not None and nxt.started is not None and a.number in ended:
            wait = max(0.0, nxt.started - ended[a.number])
        stalled = 0.0
        if cause is Cause.HANG and a.started is not None and a.number in ended:
            stalled = max(0.0, ended[a.number] - a.started - (a.progress or 0) * step)
        row = by.setdefault(cause, [0, 0, 0.0, 0.0, 0.0])
        row[0] += 1
        row[1] += a.steps_lost or 0
        row[2] += (a.steps_lost or 0) * step
        row[3] += wait
        row[4] += stalled
    _add_folded(by, ledger, step)
    losses = [Loss(c, int(r[0]), int(r[1]), r[2], r[3], r[4]) for c, r in by.items()]
    losses.sort(key=lambda x: -x.total_s)
    useful = (tot.steps_gained or 0) * step
    spent = sum(x.redone_s + x.stalled_s for x in losses)
    return Breakdown(useful, losses, max(0.0, tot.computing_s - useful - spent), tot.step_seconds)


def _add_folded(by: dict[Cause, list[float]], ledger: Ledger, step: float) -> None:
    """The compacted attempts' losses (rtool.runs.compact), so the table covers every attempt."""
    causes = ledger.folded.causes if ledger.folded else {}
    for name, (n, lost, wait, ran, progress) in causes.items():
        try:
            cause = Cause(name)
        except ValueError:
            continue
        row = by.setdefault(cause, [0, 0, 0.0, 0.0, 0.0])
        row[0] += int(n)
        row[1] += int(lost)
        row[2] += lost * step
        row[3] += wait
        if cause is Cause.HANG:
            row[4] += max(0.0, ran - progress * step)
