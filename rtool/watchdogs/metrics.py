"""The numbers a check observed, typed once for both outputs: Nagios/Icinga performance data
after `|` (rtool/watchdogs/perfdata.py) and Prometheus textfile metrics
(rtool/watchdogs/prometheus.py).

A `Metric` names one kind of number: its perfdata label suffix and unit of measure (UOM) from
the Nagios plugin guidelines, and its Prometheus family name, help and scale (Prometheus
wants base units: a percentage becomes a ratio). Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Unit(str, Enum):
    """Units of measure of the Nagios plugin guidelines that rtool writes."""

    NONE = ""  # a number of things (inodes, steps per second)
    SECONDS = "s"
    PERCENT = "%"
    BYTES = "B"
    COUNTER = "c"  # a continuous counter (the training step)


@dataclass(frozen=True)
class MetricInfo:
    prom: str  # Prometheus family name
    help: str
    unit: Unit
    suffix: str = ""  # perfdata label: `<what>` or `<what> <suffix>`
    scale: float = 1.0  # Prometheus value = value * scale


class Metric(Enum):
    DISK_USED_PCT = MetricInfo(
        "rtool_disk_used_ratio", "Share of the usable space in use (0-1).", Unit.PERCENT, "", 0.01
    )
    DISK_USED_BYTES = MetricInfo(
        "rtool_disk_used_bytes", "Bytes in use on the watched partition.", Unit.BYTES, "used"
    )
    DISK_FREE_BYTES = MetricInfo(
        "rtool_disk_free_bytes", "Bytes a user can still write (f_bavail).", Unit.BYTES, "free"
    )
    DISK_INODES_USED = MetricInfo(
        "rtool_disk_inodes_used", "Inodes in use on the watched partition.", Unit.NONE, "inodes"
    )
    DISK_INODES_FREE = MetricInfo(
        "rtool_disk_inodes_free", "Inodes a user can still create.", Unit.NONE, "inodes free"
    )
    LOG_AGE = MetricInfo(
        "rtool_log_age_seconds", "Seconds since the training log last changed.", Unit.SECONDS, "age"
    )
    HEARTBEAT_AGE = MetricInfo(
        "rtool_heartbeat_age_seconds",
        "Seconds since the shim's heartbeat was last written.",
        Unit.SECONDS,
        "heartbeat age",
    )
    TRAINING_STEP = MetricInfo(
        "rtool_training_step", "Last training step in the heartbeat.", Unit.COUNTER, "step"
    )
    STEP_RATE = MetricInfo(
        "rtool_training_steps_per_second",
        "Training steps per second (from the recent step time).",
        Unit.NONE,
        "step rate",
    )
    SAVE_SECONDS = MetricInfo(
        "rtool_checkpoint_save_seconds",
        "Duration of the last checkpoint save, in seconds.",
        Unit.SECONDS,
        "save time",
    )
    LAST_SAVE_AGE = MetricInfo(
        "rtool_checkpoint_last_save_age_seconds",
        "Seconds since the last checkpoint save finished.",
        Unit.SECONDS,
        "last save age",
    )
    CRON_TICK_AGE = MetricInfo(
        "rtool_cron_last_tick_age_seconds",
        "Seconds since the cron chain's last tick.",
        Unit.SECONDS,
        "last tick age",
    )
    MEMORY_USED_PCT = MetricInfo(
        "rtool_memory_used_ratio", "Share of memory in use (0-1).", Unit.PERCENT, "", 0.01
    )

    @property
    def info(self) -> MetricInfo:
        return self.value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Measure:
    """One observed number with its Nagios thresholds and bounds (None: not set)."""

    metric: Metric
    value: float
    warn: float | None = None
    crit: float | None = None
    min: float | None = None
    max: float | None = None

    def label(self, what: str) -> str:
        suffix = self.metric.info.suffix
        return f"{what} {suffix}" if suffix else what
