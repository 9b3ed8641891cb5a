"""Where a run's time went (pure): how each attempt ended, the time each cause cost, and the
end of an attempt that is over without an end time (sacct gives none for some requeued array
tasks): the next attempt's start, not now."""

from __future__ import annotations

import json
from pathlib import Path

from rtool.runs.endings import Cause, cause_of
from rtool.runs.losses import breakdown
from rtool.runs.model import Attempt, Ledger
from rtool.runs.signatures.base import Signature
from rtool.runs.totals import ends, totals

REAL = Path(__file__).resolve().parents[1] / "timeline" / "goodput-ledger.json"


def _a(n: int, state: str, **kw: object) -> Attempt:
    return Attempt(run="r", number=n, job_id=f"1_{n}", state=state, **kw)  # type: ignore[arg-type]


def test_each_way_an_attempt_ends() -> None:
    node = Signature("node-fail", "node failure")
    cases = [
        (_a(1, "COMPLETED", stop_reason="time_limit"), Cause.TIME_LIMIT),
        (_a(2, "TIMEOUT"), Cause.TIME_LIMIT),
        (_a(3, "REQUEUED"), Cause.HANG),  # requeued while running, the shim did not stop it
        (_a(4, "COMPLETED", stop_reason="unresponsive"), Cause.HANG),
        (_a(5, "FAILED", exit_code=1, error="RuntimeError: x"), Cause.CRASH),
        (_a(6, "OUT_OF_MEMORY"), Cause.CRASH),
        (_a(7, "NODE_FAIL"), Cause.NODE_FAILURE),
        (_a(8, "GONE", signature=node), Cause.NODE_FAILURE),
        (_a(9, "PREEMPTED"), Cause.PREEMPTED),
        (_a(10, "CANCELLED"), Cause.CANCELLED),
        (_a(11, "COMPLETED", finished=True), Cause.FINISHED),
        (_a(12, "RUNNING", started=1.0), Cause.RUNNING),
        (_a(13, "PENDING"), Cause.PENDING),
        (_a(14, "ENDED", exit_code=0), Cause.ENDED),
        (_a(15, "ENDED", exit_code=3), Cause.CRASH),
    ]
    assert [cause_of(a) for a, _ in cases] == [c for _, c in cases]


def test_the_real_run_time_by_cause() -> None:
    """The run of bench/goodput.py: a hang (requeued, sacct has no end for it), a crash, a
    node failure and time limits, 10 s steps... at 0.1 s a step."""
    led = Ledger.from_json(json.loads(REAL.read_text()))
    now = float(led.updated or 0)
    hang = led.attempts[1]
    assert hang.state == "REQUEUED" and hang.ended is None
    assert ends(led, now)[2] == led.attempts[2].started  # not `now`, 4 minutes later
    tot = totals(led, now)
    assert 330 < tot.computing_s < 340 and 0.87 < (tot.goodput or 0) < 0.89
    bd = breakdown(led, tot, now)
    by = {x.cause: x for x in bd.losses}
    assert set(by) == {Cause.HANG, Cause.CRASH, Cause.NODE_FAILURE, Cause.TIME_LIMIT}
    assert (by[Cause.HANG].steps_lost, by[Cause.CRASH].steps_lost) == (53, 48)
    assert 10 < by[Cause.HANG].stalled_s < 12  # 47 s for 363 steps of 0.1 s
    assert by[Cause.TIME_LIMIT].steps_lost == 0 and by[Cause.TIME_LIMIT].waiting_s == 2.0
    parts = bd.useful_s + bd.overhead_s + sum(x.redone_s + x.stalled_s for x in bd.losses)
    assert abs(parts - tot.computing_s) < 1e-6
