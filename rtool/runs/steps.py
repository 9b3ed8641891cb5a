"""Steps gained, lost, redone and goodput: the one definition (docs/runs.md, "Steps and
goodput"), used by `rtool history`, the pages, the Prometheus metrics and bench/goodput.py.

- A step is *done* each time a launch of the training runs it; an attempt did the steps from
  its first (`step_start`) to its highest (`step_end`).
- *Lost*: the steps an attempt did that the run did not keep. When a later attempt ran since,
  from the step that one started at up to this attempt's highest step (it did them again);
  when none did, the steps after the attempt's own last save (all of them when it saved
  nothing of its own: a save before its first step is the previous attempt's). A finished
  attempt lost nothing; a running one, nothing yet.
- *Redone*: the lost steps a later launch has already done again (the attempts' lost steps
  with a later attempt, and the steps each in-place restart did again).
- *Gained*: the steps the run kept: its highest kept step (an attempt's highest step less its
  lost steps; never a step done again later) minus the step it first started at, plus one.
- *Goodput*: gained x step time / computing time allocated, at most 1.
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
    highs = [h for h in (kept_high(a) for a in attempts) if h is not None]
    return max(highs) if highs else None


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
