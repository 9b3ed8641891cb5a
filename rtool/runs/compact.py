"""The attempts a ledger no longer keeps in full (past `[runs] keep_attempts`), kept compact:
one short row each, none dropped, and their losses by cause. So `rtool history` lists every
attempt of a 1,000-attempt run (the oldest in short: no nodes, log or signature) and the losses
table of the page covers every attempt, as the totals (`Folded`) always did.

A row is a JSON list of ROW_FIELDS (about 90 bytes): a 4 MiB ledger holds ~40,000 of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rtool.runs.model import Attempt, Folded, Source

#: The fields of a compact row, in order.
ROW_FIELDS = (
    "number",
    "job_id",
    "restart",
    "queued_at",
    "started",
    "ended",
    "state",
    "exit_code",
    "step_start",
    "step_end",
    "steps_lost",
    "stop_reason",
)
#: A tally of one cause: attempts, steps lost, waiting (s), ran (s), steps of progress.
TALLY = 5


def row_of(a: Attempt) -> tuple[Any, ...]:
    return tuple(getattr(a, name) for name in ROW_FIELDS)


def _num(v: Any, kind: type) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return kind(v)


def attempt_of(run: str, row: Sequence[Any]) -> Attempt | None:
    """The attempt of a compact row (its other fields unknown); None for a row not rtool's."""
    if len(row) != len(ROW_FIELDS):
        return None
    d = dict(zip(ROW_FIELDS, row, strict=True))
    number, job = _num(d["number"], int), d["job_id"]
    if number is None or not isinstance(job, str) or not isinstance(d["state"], str):
        return None
    stop = d["stop_reason"]
    return Attempt(
        run=run,
        number=number,
        job_id=job[:40],
        restart=_num(d["restart"], int) or 0,
        queued_at=_num(d["queued_at"], float),
        started=_num(d["started"], float),
        ended=_num(d["ended"], float),
        state=d["state"][:20],
        exit_code=_num(d["exit_code"], int),
        step_start=_num(d["step_start"], int),
        step_end=_num(d["step_end"], int),
        steps_lost=_num(d["steps_lost"], int),
        stop_reason=stop[:40] if isinstance(stop, str) else None,
        source=Source.SACCT,
    )


def rows_from_json(raw: Any) -> tuple[tuple[Any, ...], ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(tuple(r) for r in raw if isinstance(r, list) and len(r) == len(ROW_FIELDS))


def causes_from_json(raw: Any) -> dict[str, tuple[float, ...]]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for k, v in raw.items():
        if isinstance(v, list) and len(v) == TALLY and all(_num(x, float) is not None for x in v):
            out[str(k)[:40]] = tuple(float(x) for x in v)
    return out


def tally(gone: list[Attempt], next_start: float | None) -> dict[str, tuple[float, ...]]:
    """The losses of `gone` (in start order) by cause; `next_start`: when the attempt after the
    last of them started (the wait after it)."""
    from rtool.runs.losses import Cause, cause_of  # losses reads totals, which folds

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


def merged(a: dict[str, tuple[float, ...]], b: dict[str, tuple[float, ...]]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = tuple(x + y for x, y in zip(out.get(k, (0.0,) * TALLY), v, strict=True))
    return out


def rows_as_attempts(run: str, folded: Folded | None) -> list[Attempt]:
    """The folded attempts kept compact, oldest first (those rtool cannot read back skipped)."""
    if folded is None:
        return []
    got = (attempt_of(run, r) for r in folded.rows)
    return [a for a in got if a is not None]
