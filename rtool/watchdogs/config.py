"""[watch] config section (owned by the watchdogs package).

```toml
[watch]
timeout = "10s"                  # default probe timeout
prom_textfile = "/var/lib/node-exporter/textfile"   # optional: Prometheus metrics here

[[watch.job]]
name = "train-10b"               # exact job name, or a regex with regex = true
max_pending = "6h"

[[watch.log]]
path = "logs/train-*.out"        # newest match wins
stale = "30m"
job_name = "train-10b"           # stale while the job is not running: OK with a note

[[watch.disk]]
path = "/scratch"
max_used = "80%"
min_free_inodes = 100000

[[watch.memory]]
max_used = "95%"

[[watch.run]]                    # see rtool/runs/config.py
name = "train-10b"
heartbeat = "ckpt/heartbeat.json"
log = "logs/train-10b-%A_%a.out"

[[watch.cron]]                   # is the `rtool cron` chain alive? ([cron] gives the defaults)
dir = "~/rtool-cron"
grace = "15m"
```
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from rtool.core.config.types import Duration, Percent, PositiveDuration, Section, Size

S = TypeVar("S")


class JobWatch(Section):
    name: str
    regex: bool = False
    users: list[str] = []
    group: str | None = None
    partition: str | None = None
    #: PENDING longer than this (since submission) -> WARNING.
    max_pending: Duration | None = 24 * 3600.0
    #: The run these jobs are attempts of (default: the name); its ledger (rtool watch run)
    #: says whether it finished or is crash-looping.
    run: str | None = None
    #: The shim's heartbeat: its done marker (or state finished) means the run finished.
    heartbeat: str | None = None
    timeout: PositiveDuration | None = None

    @model_validator(mode="after")
    def _valid_name(self) -> JobWatch:
        if not self.name:
            raise ValueError("job name must not be empty")
        if self.regex:
            try:
                re.compile(self.name)
            except re.error as exc:
                raise ValueError(f"name is not a valid regex: {exc}") from None
        return self

    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.name if self.regex else re.escape(self.name))


class LogWatch(Section):
    path: str
    stale: Duration = 30 * 60.0
    job_name: str | None = None
    #: Heartbeat file written by the training shim (sharper than the log).
    heartbeat: str | None = None
    dump_stacks: bool = False
    #: Process to dump with py-spy (else the heartbeat's pid, or the job's processes via srun).
    pid: int | None = None
    #: `none`, `requeue`, or `signal:USR1` (scancel --signal to the job's batch step).
    on_hang: str = "none"
    timeout: PositiveDuration | None = None

    @field_validator("on_hang")
    @classmethod
    def _on_hang(cls, v: str) -> str:
        if v in ("none", "requeue") or re.fullmatch(r"signal:[A-Z0-9]+", v):
            return v
        raise ValueError(f"on_hang must be none, requeue or signal:NAME, not {v!r}")


class DiskWatch(Section):
    path: str
    max_used: Percent | None = None  # CRITICAL above
    warn_used: Percent | None = None  # WARNING above
    min_free: Size | None = None  # CRITICAL below
    max_inodes_used: Percent | None = None
    min_free_inodes: int | None = Field(None, ge=0, le=2**63)
    #: On some distributed filesystems 80% is the real 100%: percentages are of the usable part.
    usable: Percent = 100.0
    #: WARNING when the usage trend fills the partition within this.
    runway: Duration | None = None
    history: Duration = 7 * 86400.0
    trend_min_span: Duration = 3600.0
    #: Quota command (argv list or a string split like a shell would) and its output format.
    quota_cmd: list[str] | str | None = None
    quota_format: Literal["lfs", "mmlsquota", "simple"] = "simple"
    on_timeout: Literal["critical", "unknown"] = "critical"
    quota_on_failure: Literal["critical", "unknown"] = "unknown"
    timeout: PositiveDuration | None = None

    @field_validator("usable")
    @classmethod
    def _usable(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("usable must be above 0%")
        return v

    @field_validator("quota_cmd")
    @classmethod
    def _quota_cmd(cls, v: list[str] | str | None) -> list[str] | str | None:
        if v is None:
            return v
        try:
            argv = shlex.split(v) if isinstance(v, str) else v
        except ValueError as exc:
            raise ValueError(f"quota_cmd {v!r}: {exc} (an unclosed quote?)") from None
        if not argv or not argv[0].strip():
            raise ValueError("quota_cmd is empty: give the command, e.g. 'lfs quota -u me /fs'")
        return v


class MemoryWatch(Section):
    max_used: Percent = 95.0  # node RAM, CRITICAL above
    warn_used: Percent = 90.0  # node RAM, WARNING above
    max_swap_used: Percent | None = 80.0  # WARNING above
    pids: list[int] = []
    job: str | None = None
    gpu: bool = False
    gpu_max_used: Percent = 95.0
    #: WARNING when the RSS trend fills the node within this.
    runway: Duration = 24 * 3600.0
    history: Duration = 6 * 3600.0
    trend_min_span: Duration = 30 * 60.0
    timeout: PositiveDuration | None = None


class CronWatchEntry(Section):
    """One `[[watch.cron]]` entry; what it leaves out comes from the `[cron]` section."""

    #: The cron folder (default: [cron] dir).
    dir: str | None = None
    #: CRITICAL when the last tick is older than the tick period plus this (default: [cron] grace).
    grace: Duration | None = None


class WatchBase(Section):
    """What every [watch] section has; `rtool.watchdogs.registry.WatchConfig` adds one list of
    entries per registered watchdog (`[[watch.NAME]]`)."""

    timeout: PositiveDuration = 10.0
    #: node_exporter textfile-collector folder for Prometheus metrics (`--prom-textfile`).
    prom_textfile: str | None = None

    if TYPE_CHECKING:  # the generated fields: `watch.disk` is a list of DiskWatch entries

        def __getattr__(self, name: str) -> list[Any]: ...

    def entries(self, spec: type[S]) -> list[S]:
        """The entries of the watchdog whose entry type is `spec` (typed access)."""
        for name, info in type(self).model_fields.items():
            if info.annotation == list[spec]:  # type: ignore[valid-type]
                return list(getattr(self, name))
        raise KeyError(f"no [[watch.*]] entries of type {spec.__name__}")
