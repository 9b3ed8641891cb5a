"""[cron] config section (owned by the cron package; an example: docs/cron.md)."""

from __future__ import annotations

import re

from pydantic import field_validator

from rtool.core.config.types import Duration, PositiveDuration, Section

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class CronPeriods(Section):
    hourly: Duration = 3600.0
    daily: Duration = 86400.0
    weekly: Duration = 7 * 86400.0

    @field_validator("hourly", "daily", "weekly")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value < 1:
            raise ValueError("a period must be at least 1s")
        return value


class CronConfig(Section):
    #: The cron folder (cron.hourly/, cron.daily/, cron.weekly/, cron.d/, logs/).
    dir: str = "~/rtool-cron"
    #: Resources of the scheduler's own Slurm job (None: the cluster's default).
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    #: Log files older than this are removed by each tick.
    keep_logs: Duration = 7 * 86400.0
    periods: CronPeriods = CronPeriods()
    #: How often the scheduler ticks (default: the hourly period). cron.d lines are
    #: checked at each tick, so this is their resolution.
    tick: Duration | None = None
    #: Local time (HH:MM) of the daily and weekly slots, and the weekday of the weekly one.
    daily_at: str = "00:00"
    weekly_on: str = "mon"
    #: Timeout of one executable or cron.d command run inside the scheduler's job.
    job_timeout: PositiveDuration = 30 * 60.0
    #: `rtool watch cron`: CRITICAL when the last tick is older than the tick period + grace.
    grace: Duration = 10 * 60.0
    #: Healthchecks-style URL each tick GETs (`<url>/fail` when a job failed). Prefer
    #: ping_url_env (the name of an environment variable holding it): such URLs are secrets.
    ping_url: str | None = None
    ping_url_env: str | None = None
    ping_timeout: PositiveDuration = 10.0

    @field_validator("daily_at")
    @classmethod
    def _hhmm(cls, value: str) -> str:
        m = re.fullmatch(r"(\d{1,2}):(\d{2})", value.strip(), re.ASCII)
        if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
            raise ValueError(f"daily_at must be HH:MM (24h), got {value!r}")
        return value.strip()

    @field_validator("weekly_on")
    @classmethod
    def _weekday(cls, value: str) -> str:
        day = value.strip().lower()[:3]
        if day not in WEEKDAYS:
            raise ValueError(f"weekly_on must be one of {', '.join(WEEKDAYS)}, got {value!r}")
        return day

    @field_validator("tick", "job_timeout", "grace", "ping_timeout")
    @classmethod
    def _at_least_1s(cls, value: float | None) -> float | None:
        if value is not None and value < 1:
            raise ValueError("must be at least 1s")
        return value

    @property
    def tick_period(self) -> float:
        return self.tick if self.tick is not None else self.periods.hourly
