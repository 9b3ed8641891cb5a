"""Wall-clock slot arithmetic (pure).

A period's slots are the local times `t` with `(t + utcoffset(t) - offset) % period == 0`:
with period 1h and offset 0 the full hours, with period 1d and offset 3h every day at 03:00,
with period 7d and the Monday offset every Monday. Ticks are queued for the next slot, never
for "now + period", so queue waits never accumulate; a period is due once when its current
slot is newer than the last slot it ran for, however many slots were missed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rtool.cron.config import WEEKDAYS, CronConfig

PERIODS = ("hourly", "daily", "weekly")
#: 1970-01-01 (epoch day 0) was a Thursday.
_EPOCH_WEEKDAY = WEEKDAYS.index("thu")

TzOffset = Callable[[float], float]


def local_utcoffset(t: float) -> float:
    """Seconds east of UTC of the local time zone at epoch time `t`."""
    return float(time.localtime(t).tm_gmtoff)


def utc(_: float) -> float:
    return 0.0


@dataclass(frozen=True)
class Period:
    name: str
    length: float
    offset: float  # seconds after the local epoch anchor


def slot_floor(
    t: float, period: float, offset: float = 0.0, tz: TzOffset = local_utcoffset
) -> float:
    """The latest slot at or before `t`."""
    local = t + tz(t) - offset
    return t - (local % period)


def next_slot(
    t: float, period: float, offset: float = 0.0, tz: TzOffset = local_utcoffset
) -> float:
    """The first slot strictly after `t`."""
    return slot_floor(t, period, offset, tz) + period


def periods(cfg: CronConfig) -> list[Period]:
    """hourly (full hours), daily (at daily_at), weekly (weekly_on at daily_at)."""
    hours, minutes = cfg.daily_at.split(":")
    at = int(hours) * 3600.0 + int(minutes) * 60.0
    week_shift = ((WEEKDAYS.index(cfg.weekly_on) - _EPOCH_WEEKDAY) % 7) * 86400.0
    p = cfg.periods
    return [
        Period("hourly", p.hourly, 0.0),
        Period("daily", p.daily, at % p.daily),
        Period("weekly", p.weekly, (week_shift + at) % p.weekly),
    ]


def tick_period(cfg: CronConfig) -> Period:
    return Period("tick", cfg.tick_period, 0.0)


def period_lengths(cfg: CronConfig) -> dict[str, float]:
    """{"tick": s, "hourly": s, "daily": s, "weekly": s} (what `rtool cron list` shows)."""
    return {p.name: p.length for p in [tick_period(cfg), *periods(cfg)]}


def due_periods(
    specs: list[Period],
    last_slots: Mapping[str, float],
    now: float,
    tz: TzOffset = local_utcoffset,
) -> dict[str, float]:
    """{period name: its current slot} for every period whose current slot has not run yet.

    A period with no recorded slot is not due (it starts counting from `initial_slots`).
    """
    due = {}
    for p in specs:
        current = slot_floor(now, p.length, p.offset, tz)
        last = last_slots.get(p.name)
        if last is not None and current > last + 1e-6:
            due[p.name] = current
    return due


def initial_slots(
    specs: list[Period], now: float, tz: TzOffset = local_utcoffset
) -> dict[str, float]:
    """Last-run slots for a new chain: each period first runs at its next slot after `now`."""
    return {p.name: slot_floor(now, p.length, p.offset, tz) for p in specs}


def lateness(start: float, slot: float) -> float:
    """How late a tick started against its slot (never negative)."""
    return max(0.0, start - slot)


def begin_arg(t: float) -> str:
    """`sbatch --begin` value for epoch `t` (local time, whole seconds, rounded up)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(math.ceil(t)))
