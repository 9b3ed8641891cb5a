"""A run summed up: attempts, steps gained and lost, time queued and computing, goodput; and the
ledger's running totals of the attempts it no longer keeps in full (`fold`)."""

from __future__ import annotations

from dataclasses import replace

from rtool.runs import compact, rows, steps
from rtool.runs.model import Attempt, Folded, Ledger, Totals


def step_seconds(ledger: Ledger) -> float | None:
    """The training's step time: the heartbeat's, else the fastest attempt's (start-up
    included, so goodput is then a lower bound)."""
    if ledger.step_seconds:
        return ledger.step_seconds
    rates = (a.duration / a.progress for a in ledger.attempts if a.duration and a.progress)
    return min(rates, default=None)


def ends(ledger: Ledger, now: float) -> dict[int, float]:
    """When each started attempt ended (by number): its end time; for one that is over without
    an end time (sacct gives none for some requeued array tasks) the next attempt's start; for
    one still running, now."""
    out: dict[int, float] = {}
    next_start: float | None = None  # the earliest start after this attempt
    for a in reversed(ledger.attempts):
        if a.started is None:
            continue
        end = a.ended if a.ended is not None or not a.is_over else next_start
        out[a.number] = max(a.started, end if end is not None else now)
        next_start = a.started if next_start is None else min(next_start, a.started)
    return out


def totals(ledger: Ledger, now: float) -> Totals:
    """The run's totals, by rtool.runs.steps (the one definition of gained, lost, redone and
    goodput). Queue time is unknown (None) when no attempt's queue wait is known (degraded
    mode: the batch script's records have no submit time)."""
    atts, f = ledger.attempts, ledger.folded or Folded()
    ended = ends(ledger, now)
    first = next((a.step_start for a in atts if a.step_start is not None), 0) or 0
    if f.attempts:
        first = f.first_step or 0
    gained = steps.gained(ledger.best_step, first)
    lost = f.steps_lost + sum(a.steps_lost or 0 for a in atts)
    waits = [a.queue_wait for a in atts if a.queue_wait is not None]
    queued = f.queued_s + sum(waits) if waits or f.queued_s else None
    busy = f.computing_s + sum(ended[a.number] - a.started for a in atts if a.started is not None)
    in_place = sum(r.steps_redone or 0 for r in ledger.restarts)
    lost += in_place  # the steps each in-place restart did again
    redone = f.steps_lost + in_place + sum(_redone(atts, i) for i in range(len(atts)))
    sec = step_seconds(ledger)
    return Totals(
        attempts=f.attempts + len(atts),
        steps_gained=gained,
        steps_lost=lost,
        queued_s=queued,
        computing_s=busy,
        goodput=steps.goodput(gained, sec, busy),
        step_seconds=sec,
        restarts_in_place=len(ledger.restarts),
        steps_redone=redone,
    )


def _redone(atts: list[Attempt], i: int) -> int:
    """Attempt i's lost steps when a later attempt has run (so it did them again)."""
    later = any(b.step_start is not None for b in atts[i + 1 :])
    return (atts[i].steps_lost or 0) if later else 0


def fold(
    attempts: list[Attempt], folded: Folded | None, keep: int, now: float
) -> tuple[list[Attempt], Folded | None]:
    """Keep the last `keep` attempts in full; the ended ones before them are summed up into
    `folded`, each kept as a compact row, their losses tallied by cause (an attempt still
    running is never folded)."""
    excess = len(attempts) - max(1, keep)
    if excess <= 0:
        return attempts, folded
    gone = attempts[:excess]
    while gone and not gone[-1].is_over:
        gone.pop()
    if not gone or any(not a.is_over for a in gone):
        return attempts, folded
    kept = attempts[len(gone) :]
    base = (folded or Folded()).add(gone, now)
    causes = compact.tally(gone, kept[0].started if kept else None)
    return kept, replace(
        base,
        rows=(*base.rows, *(compact.row_of(a) for a in gone)),
        causes=rows.merged(base.causes, causes),
    )
