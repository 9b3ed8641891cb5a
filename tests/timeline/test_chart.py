"""The timeline's chart, pure: the steps an attempt lost are drawn dashed."""

from __future__ import annotations

import re

from rtool.app.timeline.chart import chart
from rtool.runs.ledger import steps_lost
from rtool.runs.model import Attempt, Ledger

T0 = 1_790_000_000.0


def _att(n: int, start: int, end: int, saved: int | None, **kw: object) -> Attempt:
    return Attempt(
        run="r", number=n, job_id=f"7_{n}", nodes=("n1",), started=T0 + 1000 * n,
        ended=kw.pop("ended", T0 + 1000 * n + 600), state=str(kw.pop("state", "FAILED")),
        exit_code=1,
        step_start=start, step_end=end, last_saved_step=saved, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def _lost_lines(svg: str) -> list[str]:
    return re.findall(r'<line class="lost"[^>]*><title>([^<]*)</title>', svg)


def test_steps_lost_are_dashed_also_when_the_attempt_crashed_before_its_first_save() -> None:
    """Issue 35.11: attempt 2 ran 501-550 and crashed before its own first save (its heartbeat
    still names the save at 500 of attempt 1); attempt 3 redid 501-550: 50 lost, dashed."""
    atts = steps_lost(
        [
            _att(1, 0, 520, 500),
            _att(2, 501, 550, 500),  # the previous attempt's save, carried
            _att(3, 501, 560, None),  # no save at all
            _att(4, 501, 600, None, state="RUNNING", ended=None),
        ]
    )
    assert [a.steps_lost for a in atts[:3]] == [20, 50, 60]
    svg = chart(Ledger(run="r", attempts=atts), T0 + 5000)
    assert _lost_lines(svg) == [
        "attempt 1: 20 steps lost after the save at 500",
        "attempt 2: 50 steps lost (no save of its own)",
        "attempt 3: 60 steps lost (no save of its own)",
    ]
