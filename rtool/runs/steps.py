"""Steps gained, lost, redone and goodput: the one definition (docs/runs.md, "Steps gained,
lost, redone and goodput"), used by `rtool history`, the pages, the Prometheus metrics and
bench/goodput.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.runs.attempt_records import heartbeat_key
from rtool.runs.model import Attempt, Ledger

#: A heartbeat in one of these states is of a launch still running: its step counts.
LIVE = (RunState.STARTING, RunState.RUNNING, RunState.SAVING)


def lost(a: Attempt, next_start: int | None) -> int | None:
    """The steps attempt `a` lost (None: unknown); `next_start`: the first step of the next
    attempt that ran since, None when none did."""
    if a.step_end is None or a.finished:
        return None
    if next_start is not None:
        return max(0, a.step_end - next_start + 1)
    if not a.is_over:
        return None
    first = a.step_start if a.step_start is not None else 0
    own = a.last_saved_step
    if own is None or own < first:  # nothing saved of its own: every step it did is lost
        return max(0, a.step_end - first + 1)
    return max(0, a.step_end - own)


def kept_high(a: Attempt) -> int | None:
    """The highest step of `a` the run kept (None: it did no step, or all were lost)."""
    if a.step_end is None:
        return None
    high = a.step_end - (a.steps_lost or 0)
    first = a.step_start if a.step_start is not None else 0
    return high if high >= first else None


def highest_kept(attempts: Sequence[Attempt]) -> int | None:
    """The run's highest kept step: no step that was done again later counts."""
    return max((h for a in attempts if (h := kept_high(a)) is not None), default=None)


def gained(highest: int | None, first_step: int) -> int | None:
    """Steps the run kept, from the step it first started at up to its highest kept step."""
    return None if highest is None else max(0, highest - first_step + 1)


def goodput(
    steps_gained: int | None, step_seconds: float | None, computing_s: float
) -> float | None:
    """The share of the computing time allocated that produced kept steps (None: unknown)."""
    if steps_gained is None or not step_seconds or computing_s <= 0:
        return None
    return min(1.0, steps_gained * step_seconds / computing_s)


def best_step(ledger: Ledger, prev: Ledger | None, hb: Heartbeat | None, now: float) -> None:
    """The highest kept step (rtool.runs.steps: never a step done again later) and when it
    last grew; the live heartbeat's step counts while its launch runs."""
    kept = [k for k in (highest_kept(ledger.attempts),) if k is not None]
    running = heartbeat_key(hb) not in {a.key for a in ledger.attempts if a.is_over}
    if hb is not None and hb.step is not None and hb.state in LIVE and running:
        kept.append(hb.step)
    best = max(kept) if kept else None
    before = prev.best_step if prev else None
    if best is None:
        ledger.best_step, ledger.best_step_at = before, prev.best_step_at if prev else None
        return
    if before is None or best > before:
        at = hb.time if hb is not None and hb.step == best else now
        ledger.best_step, ledger.best_step_at = best, min(at, now)
    else:  # no growth (a loss found since lowers it): since when it last grew
        ledger.best_step = best
        ledger.best_step_at = prev.best_step_at if prev and prev.best_step_at else now
