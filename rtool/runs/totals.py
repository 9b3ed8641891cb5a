"""A run summed up: attempts, steps gained and lost, time queued and computing, goodput."""

from __future__ import annotations

from rtool.runs.model import Ledger, Totals


def step_seconds(ledger: Ledger) -> float | None:
    """The training's step time: the heartbeat's, else the fastest attempt's (start-up
    included, so goodput is then a lower bound)."""
    if ledger.step_seconds:
        return ledger.step_seconds
    rates = [
        a.duration / a.progress
        for a in ledger.attempts
        if a.duration and a.progress  # both known and non-zero
    ]
    return min(rates) if rates else None


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
    atts = ledger.attempts
    ended = ends(ledger, now)
    first = next((a.step_start for a in atts if a.step_start is not None), 0) or 0
    gained = (ledger.best_step - first) if ledger.best_step is not None else None
    lost = sum(a.steps_lost or 0 for a in atts)
    queued = sum(a.queue_wait or 0.0 for a in atts)
    computing = sum(ended[a.number] - a.started for a in atts if a.started is not None)
    sec = step_seconds(ledger)
    goodput = None
    if gained is not None and sec and computing > 0:
        goodput = min(1.0, gained * sec / computing)
    return Totals(
        attempts=len(atts),
        steps_gained=gained,
        steps_lost=lost,
        queued_s=queued,
        computing_s=computing,
        goodput=goodput,
        step_seconds=sec,
    )
