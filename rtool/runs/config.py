"""[runs] config section (owned by the runs package; docs/runs.md), and one `[[watch.run]]` entry
(its keys and their help are the `setting`s of `RunWatch`, listed in docs/watchdogs.md).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration, Section, Size

if TYPE_CHECKING:
    from rtool.runs.signatures.base import Pattern
    from rtool.runs.straggler import Limits


#: The longest `[[runs.signature]]` pattern accepted.
MAX_PATTERN = 1000


class SignatureEntry(Section):
    name: str
    label: str
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _regex(cls, v: str) -> str:
        from rtool.core.linear import problem

        if len(v) > MAX_PATTERN:
            raise ValueError(f"pattern is longer than {MAX_PATTERN} characters")
        try:
            re.compile(v, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"pattern is not a valid regex: {exc}") from None
        why = problem(v, re.IGNORECASE)
        if why:
            raise ValueError(f"pattern {v[:60]!r} is not linear-time: {why}")
        return v


class RunsConfig(Section):
    log_tail: Size = 1024 * 1024
    #: Attempts a run's ledger keeps in full; older ones are summed up in its totals.
    keep_attempts: int = Field(100, ge=1, le=1000)
    signature: list[SignatureEntry] = []

    def patterns(self) -> tuple[Pattern, ...]:
        from rtool.runs.signatures import compile_extra

        return compile_extra((s.name, s.label, s.pattern) for s in self.signature)


_RUN_NAME = re.compile(r"[^-\s,][^\s,]{0,199}")


class RunWatch(Section):
    name: str = setting(..., "The run (rtool submit --run; default the job name).")
    job_name: str | None = setting(None, "The Slurm job name of its attempts (default: the run).")
    heartbeat: str | None = setting(None, "The shim's heartbeat file.")
    records: str | None = setting(
        None, "The batch script's attempt records (default: <heartbeat>.attempts)."
    )
    log: str | None = setting(
        None, "The attempt's log, Slurm-style: logs/train-%A_%a.out (%j %A %a %x %%)."
    )
    launcher_logs: str | None = setting(
        None, "The launcher's per-rank log folder (torchrun --log-dir), read for the root cause."
    )
    total_steps: int | None = setting(None, "The steps the run needs; enables the budget check.")
    crash_loop: int = setting(2, "Bad attempts in a row that make a crash loop -> CRITICAL.")
    short: Duration = setting(
        300.0, "An attempt that dies within this of its start (not on a time limit) is bad."
    )
    on_crash_loop: Literal["hold", "none"] = setting(
        "hold", "On a crash loop: hold the rest of the array (scontrol hold) or do nothing."
    )
    stalled: Duration | None = setting(
        2 * 3600.0, "Highest step not grown this long while attempts run -> CRITICAL."
    )
    no_progress: int | None = setting(
        3,
        "Launches in a row (attempts, in-place restarts) that resume at the same step -> "
        "CRITICAL stalled.",
    )
    restart_storm: int | None = setting(6, "More attempts than this in an hour -> WARNING.")
    slow_ratio: float = setting(
        1.15,
        "The recent median step time over the run's steady median that warns (the step "
        "time regressed).",
    )
    slow_share: float = setting(
        0.9, "A rank or node slowest in this part of the recent checks is consistently slowest."
    )
    slow_lag: float = setting(
        0.05, "The lag over the ranks' median such a node must have (0.05: 5 %)."
    )
    lookback: Duration = setting(14 * 86400.0, "How far back sacct looks for the run's attempts.")
    accounting: Literal["auto", "off"] = setting(
        "auto",
        "auto: ask sacct where accounting exists; off: never (degraded mode: the batch "
        "script's records).",
        switch=("--no-accounting", "off"),
    )
    timeout: Duration | None = setting(None, "Timeout of this entry's probes.")

    @model_validator(mode="after")
    def _valid(self) -> RunWatch:
        for label, value in (("name", self.name), ("job_name", self.job_name)):
            if value is not None and not _RUN_NAME.fullmatch(value):
                raise ValueError(f"{label} {value!r}: no spaces or commas, not starting with '-'")
        if self.crash_loop < 1:
            raise ValueError("crash_loop must be at least 1")
        if self.slow_ratio <= 1:
            raise ValueError("slow_ratio must be above 1")
        if not 0 < self.slow_share <= 1 or self.slow_lag < 0:
            raise ValueError("slow_share must be in (0, 1] and slow_lag at least 0")
        if self.no_progress is not None and self.no_progress < 2:
            raise ValueError("no_progress must be at least 2")
        return self

    @property
    def slurm_name(self) -> str:
        return self.job_name or self.name

    def slow_limits(self) -> Limits:
        from rtool.runs.straggler import Limits

        return Limits(self.slow_ratio, self.slow_share, self.slow_lag)
