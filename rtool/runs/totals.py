"""A run summed up: attempts, steps gained and lost, time queued and computing, goodput."""

from __future__ import annotations

from rtool.runs.model import Attempt, Ledger, Totals


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


def _computing(a: Attempt, now: float) -> float:
    if a.started is None:
        return 0.0
    end = a.ended if a.ended is not None else now
    return max(0.0, end - a.started)


def totals(ledger: Ledger, now: float) -> Totals:
    atts = ledger.attempts
    first = next((a.step_start for a in atts if a.step_start is not None), 0) or 0
    gained = (ledger.best_step - first) if ledger.best_step is not None else None
    lost = sum(a.steps_lost or 0 for a in atts)
    lost += sum(r.steps_redone or 0 for r in ledger.restarts)  # redone after in-place restarts
    queued = sum(a.queue_wait or 0.0 for a in atts)
    computing = sum(_computing(a, now) for a in atts)
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
        restarts_in_place=len(ledger.restarts),
    )
