"""The compact rows of folded attempts (rtool.runs.compact) as stored: their fields, and the
checks that read them back from a ledger's JSON. Imports nothing of rtool: the ledger's model
reads its folded rows with it.
"""

from __future__ import annotations

import math
from typing import Any

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


def num(v: Any, kind: type) -> Any:
    """`v` as `kind` when it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return kind(v)


def rows_from_json(raw: Any) -> tuple[tuple[Any, ...], ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(tuple(r) for r in raw if isinstance(r, list) and len(r) == len(ROW_FIELDS))


def causes_from_json(raw: Any) -> dict[str, tuple[float, ...]]:
    if not isinstance(raw, dict):
        return {}
    return {
        str(k)[:40]: tuple(float(x) for x in v)
        for k, v in raw.items()
        if isinstance(v, list) and len(v) == TALLY and all(num(x, float) is not None for x in v)
    }


def merged(a: dict[str, tuple[float, ...]], b: dict[str, tuple[float, ...]]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = tuple(x + y for x, y in zip(out.get(k, (0.0,) * TALLY), v, strict=True))
    return out
