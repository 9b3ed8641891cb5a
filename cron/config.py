"""[cron] config section (owned by the cron package)."""

from __future__ import annotations

from rtool.config.types import Duration, Section


class CronPeriods(Section):
    hourly: Duration = 3600.0
    daily: Duration = 86400.0
    weekly: Duration = 7 * 86400.0


class CronConfig(Section):
    dir: str = "~/rtool-cron"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    keep_logs: Duration = 7 * 86400.0
    periods: CronPeriods = CronPeriods()
