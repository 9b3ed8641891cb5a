"""Slot arithmetic: ticks are anchored to wall-clock slots, missed slots run once."""

from __future__ import annotations

import calendar

import pytest

from rtool.cron.config import CronConfig
from rtool.cron.slots import (
    due_periods,
    initial_slots,
    lateness,
    next_slot,
    periods,
    slot_floor,
    utc,
)


def ts(text: str) -> float:
    """UTC epoch of `YYYY-mm-dd HH:MM:SS`."""
    return float(calendar.timegm(__import__("time").strptime(text, "%Y-%m-%d %H:%M:%S")))


def test_hourly_slots_are_full_hours_not_now_plus_period() -> None:
    t = ts("2024-05-01 10:17:42")
    assert slot_floor(t, 3600, tz=utc) == ts("2024-05-01 10:00:00")
    assert next_slot(t, 3600, tz=utc) == ts("2024-05-01 11:00:00")
    # a tick that started 40 minutes late still queues the next one for the full hour
    assert next_slot(ts("2024-05-01 11:40:00"), 3600, tz=utc) == ts("2024-05-01 12:00:00")


def test_slot_exactly_on_the_boundary_is_its_own_slot() -> None:
    t = ts("2024-05-01 10:00:00")
    assert slot_floor(t, 3600, tz=utc) == t
    assert next_slot(t, 3600, tz=utc) == t + 3600


def test_local_time_zone_offset_moves_the_anchor() -> None:
    # UTC+05:30: full local hours are at :30 UTC
    def india(_: float) -> float:
        return 5.5 * 3600

    assert slot_floor(ts("2024-05-01 10:40:00"), 3600, tz=india) == ts("2024-05-01 10:30:00")


def test_daily_and_weekly_offsets() -> None:
    cfg = CronConfig(daily_at="03:15", weekly_on="wed")
    by_name = {p.name: p for p in periods(cfg)}
    daily, weekly = by_name["daily"], by_name["weekly"]
    t = ts("2024-05-02 01:00:00")  # a Thursday, before 03:15
    assert slot_floor(t, daily.length, daily.offset, utc) == ts("2024-05-01 03:15:00")
    assert next_slot(t, daily.length, daily.offset, utc) == ts("2024-05-02 03:15:00")
    # 2024-05-01 was a Wednesday
    assert slot_floor(t, weekly.length, weekly.offset, utc) == ts("2024-05-01 03:15:00")
    assert next_slot(t, weekly.length, weekly.offset, utc) == ts("2024-05-08 03:15:00")


def test_compressed_periods_keep_working() -> None:
    cfg = CronConfig.model_validate({"periods": {"hourly": "5s", "daily": "20s", "weekly": "1m"}})
    hourly = periods(cfg)[0]
    assert slot_floor(1000.0 + 7.3, hourly.length, hourly.offset, utc) == 1005.0
    assert next_slot(1007.3, hourly.length, hourly.offset, utc) == 1010.0


def test_missed_slots_run_once_and_new_chain_waits_for_next_slot() -> None:
    specs = periods(CronConfig())
    start = ts("2024-05-01 10:17:00")
    last = initial_slots(specs, start, utc)
    assert due_periods(specs, last, start + 60, utc) == {}
    # the tick waited in the queue for 5 hours: hourly is due once, for the current slot
    due = due_periods(specs, last, ts("2024-05-01 15:02:00"), utc)
    assert due == {"hourly": ts("2024-05-01 15:00:00")}
    last = {**last, **due}
    assert due_periods(specs, last, ts("2024-05-01 15:30:00"), utc) == {}
    # next day: daily is due too
    assert set(due_periods(specs, last, ts("2024-05-02 00:00:01"), utc)) == {"hourly", "daily"}


def test_unknown_period_is_not_due() -> None:
    specs = periods(CronConfig())
    assert due_periods(specs, {}, 1e9, utc) == {}


def test_lateness_is_never_negative() -> None:
    assert lateness(100.5, 100.0) == pytest.approx(0.5)
    assert lateness(99.0, 100.0) == 0.0


def test_bad_config_values_name_the_problem() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="HH:MM"):
        CronConfig(daily_at="25:00")
    with pytest.raises(ValidationError, match="weekly_on"):
        CronConfig(weekly_on="someday")
    with pytest.raises(ValidationError, match="at least 1s"):
        CronConfig.model_validate({"periods": {"hourly": "0s"}})
