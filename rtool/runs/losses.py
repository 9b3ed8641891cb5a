"""Where a run's time went, by cause: how each attempt ended, the steps it lost (done again by
the next one) and the wait until the next attempt started. Pure; read by the timeline page.

Causes come from the ledger alone (rtool.runs.endings).
"""

from __future__ import annotations

from dataclasses import dataclass

from rtool.runs.endings import Cause, cause_of
from rtool.runs.model import Ledger, Totals
from rtool.runs.totals import ends


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
        _add(by, cause, (1, a.steps_lost or 0, (a.steps_lost or 0) * step, wait, stalled))
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
        stalled = max(0.0, ran - progress * step) if cause is Cause.HANG else 0.0
        _add(by, cause, (int(n), int(lost), lost * step, wait, stalled))


def _add(by: dict[Cause, list[float]], cause: Cause, values: tuple[float, ...]) -> None:
    """Add one attempt's (or tally's) attempts, steps lost, redone, waiting, stalled."""
    row = by.setdefault(cause, [0.0] * len(values))
    for i, x in enumerate(values):
        row[i] += x
