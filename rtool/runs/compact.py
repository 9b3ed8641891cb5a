"""The attempts a ledger no longer keeps in full (past `[runs] keep_attempts`), kept compact:
one short row each, none dropped, and their losses by cause. So `rtool history` lists every
attempt of a 1,000-attempt run (the oldest in short: no nodes, log or signature) and the losses
table of the page covers every attempt, as the totals (`Folded`) always did.

A row is a JSON list of ROW_FIELDS (about 90 bytes): a 4 MiB ledger holds ~40,000 of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rtool.runs.endings import Cause, cause_of
from rtool.runs.model import Attempt, Folded, Source
from rtool.runs.rows import ROW_FIELDS, TALLY, num


def row_of(a: Attempt) -> tuple[Any, ...]:
    return tuple(getattr(a, name) for name in ROW_FIELDS)


def attempt_of(run: str, row: Sequence[Any]) -> Attempt | None:
    """The attempt of a compact row (its other fields unknown); None for a row not rtool's."""
    if len(row) != len(ROW_FIELDS):
        return None
    d = dict(zip(ROW_FIELDS, row, strict=True))
    number, job = num(d["number"], int), d["job_id"]
    if number is None or not isinstance(job, str) or not isinstance(d["state"], str):
        return None
    stop = d["stop_reason"]
    return Attempt(
        run=run,
        number=number,
        job_id=job[:40],
        restart=num(d["restart"], int) or 0,
        queued_at=num(d["queued_at"], float),
        started=num(d["started"], float),
        ended=num(d["ended"], float),
        state=d["state"][:20],
        exit_code=num(d["exit_code"], int),
        step_start=num(d["step_start"], int),
        step_end=num(d["step_end"], int),
        steps_lost=num(d["steps_lost"], int),
        stop_reason=stop[:40] if isinstance(stop, str) else None,
        source=Source.SACCT,
    )


def tally(gone: list[Attempt], next_start: float | None) -> dict[str, tuple[float, ...]]:
    """The losses of `gone` (in start order) by cause; `next_start`: when the attempt after the
    last of them started (the wait after it)."""
    out: dict[str, list[float]] = {}
    for i, a in enumerate(gone):
        cause = cause_of(a)
        if cause in (Cause.RUNNING, Cause.PENDING, Cause.FINISHED):
            continue
        nxt = gone[i + 1].started if i + 1 < len(gone) else next_start
        end = a.ended if a.ended is not None else nxt
        wait = max(0.0, nxt - end) if nxt is not None and end is not None else 0.0
        ran = max(0.0, end - a.started) if end is not None and a.started is not None else 0.0
        t = out.setdefault(cause.value, [0.0] * TALLY)
        for j, x in enumerate((1, a.steps_lost or 0, wait, ran, a.progress or 0)):
            t[j] += x
    return {k: tuple(v) for k, v in out.items()}


def rows_as_attempts(run: str, folded: Folded | None) -> list[Attempt]:
    """The folded attempts kept compact, oldest first (those rtool cannot read back skipped)."""
    if folded is None:
        return []
    got = (attempt_of(run, r) for r in folded.rows)
    return [a for a in got if a is not None]
