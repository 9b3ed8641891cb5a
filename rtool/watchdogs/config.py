"""The [watch] config section: one entry type per watchdog (a full example: docs/watchdogs.md,
"Config: `[watch]` and `rtool watch all`")."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import field_validator, model_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration, Percent, PositiveDuration, Section, Size

S = TypeVar("S")

_TIMEOUT = "Timeout of this entry's probes (default: [watch] timeout)."


class JobWatch(Section):
    name: str = setting(..., "Job name (repeat for several).", flag="--name", each=True)
    regex: bool = setting(False, "Names are regular expressions (full match).")
    users: list[str] = setting(
        [], "Watch this user's jobs instead of yours, read-only (repeatable).", flag="--user"
    )
    group: str | None = setting(None, "Watch the jobs of this unix group's members, read-only.")
    partition: str | None = setting(None, "Only jobs in this partition.")
    max_pending: Duration | None = setting(
        24 * 3600.0, "PENDING longer than this (since submission) -> WARNING."
    )
    run: str | None = setting(
        None,
        "The run these jobs are attempts of (default: the name); its ledger says whether it "
        "finished or is crash-looping.",
    )
    heartbeat: str | None = setting(
        None, "The shim's heartbeat: its done marker (or state finished) means finished."
    )
    timeout: PositiveDuration | None = setting(None, _TIMEOUT)

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
    path: str = setting(..., "Log file or glob (newest match wins).")
    stale: Duration = setting(30 * 60.0, "Not written for longer -> CRITICAL.")
    job_name: str | None = setting(None, "Stale while this job is not running: OK with a note.")
    heartbeat: str | None = setting(
        None, "Heartbeat file of the training shim (a sharper signal than the log)."
    )
    dump_stacks: bool = setting(False, "On a hang, attach a py-spy dump to the alert.")
    pid: int | None = setting(None, "Process to dump (else the heartbeat's pid, or the job's).")
    on_hang: str = setting("none", "none, requeue or signal:USR1 (once per hang).")
    timeout: PositiveDuration | None = setting(None, _TIMEOUT)

    @field_validator("on_hang")
    @classmethod
    def _on_hang(cls, v: str) -> str:
        if v in ("none", "requeue") or re.fullmatch(r"signal:[A-Z0-9]+", v):
            return v
        raise ValueError(f"on_hang must be none, requeue or signal:NAME, not {v!r}")


class DiskWatch(Section):
    path: str = setting(..., "Paths on the partitions the run needs.", each=True)
    max_used: Percent | None = setting(90.0, "Used above -> CRITICAL.")
    warn_used: Percent | None = setting(None, "Used above -> WARNING.")
    min_free: Size | None = setting(None, "Free below -> CRITICAL, e.g. 5TiB.")
    max_inodes_used: Percent | None = setting(None, "Inodes used above -> CRITICAL, e.g. 90%.")
    min_free_inodes: int | None = setting(
        None, "Free inodes below -> CRITICAL, e.g. 100000.", ge=0, le=2**63
    )
    usable: Percent = setting(
        100.0, "Share of the size that is usable (80%: percentages are of that part)."
    )
    runway: Duration | None = setting(None, "WARNING when the usage trend fills it within this.")
    history: Duration = setting(7 * 86400.0, "How long the usage history is kept.")
    trend_min_span: Duration = setting(3600.0, "History needed before a trend counts.")
    quota_cmd: list[str] | str | None = setting(
        None, "Quota command (argv list or a string split like a shell would)."
    )
    quota_format: Literal["lfs", "mmlsquota", "simple"] = setting(
        "simple", "Output format of the quota command."
    )
    on_timeout: Literal["critical", "unknown"] = setting(
        "critical", "Status of a probe that hangs (a hung mount)."
    )
    quota_on_failure: Literal["critical", "unknown"] = setting(
        "unknown", "Status when the quota command fails."
    )
    timeout: PositiveDuration | None = setting(None, _TIMEOUT)

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
    max_used: Percent = setting(95.0, "Node RAM used above -> CRITICAL.")
    warn_used: Percent = setting(90.0, "Node RAM used above -> WARNING.")
    max_swap_used: Percent | None = setting(80.0, "Swap used above -> WARNING.")
    pids: list[int] = setting(
        [], "Watch the RSS growth of this process (repeatable).", flag="--pid"
    )
    job: str | None = setting(None, "Watch the RSS growth of a Slurm job's processes here.")
    gpu: bool = setting(False, "Check GPU memory (nvidia-smi) if there is a GPU.")
    gpu_max_used: Percent = setting(95.0, "GPU memory used above -> CRITICAL.")
    runway: Duration = setting(24 * 3600.0, "WARNING when the RSS growth fills RAM within this.")
    history: Duration = setting(6 * 3600.0, "How long the RSS history is kept.")
    trend_min_span: Duration = setting(30 * 60.0, "History needed before a trend counts.")
    timeout: PositiveDuration | None = setting(None, _TIMEOUT)


class CheckpointWatch(Section):
    """One `[[watch.checkpoint]]` entry: one checkpoint folder of a run (docs/watchdogs.md)."""

    path: str = setting(..., "Checkpoint folder of the run (one entry per folder).", each=True)
    pattern: str | None = setting(
        None,
        "Glob of the checkpoint names in the folder; left out, every name with a step number "
        "(step_000123, checkpoint-123, epoch=1-step=123.ckpt, iter_0000123, ckpt_123.pt).",
    )
    heartbeat: str | None = setting(
        None, "The shim's heartbeat: its step and step time give the pace of saves."
    )
    save_every: int | None = setting(
        None, "Steps between saves (default: the step gap between the newest checkpoints)."
    )
    max_age: Duration | None = setting(
        None, "Newest complete checkpoint older than this -> CRITICAL (default: from the pace)."
    )
    late: float = setting(
        2.0, "A save is overdue after this many save intervals (in steps, else in time)."
    )
    files: list[str] = setting(
        [],
        "A file (or glob) every checkpoint folder holds when complete (repeatable; "
        "default for checkpoint-N/: trainer_state.json).",
        flag="--file",
    )
    marker: str | None = setting(
        None,
        "Completion marker, relative to the folder, {NAME} for the checkpoint's name: "
        "{NAME}/COMPLETE, {NAME}.done.",
    )
    min_size: Percent = setting(
        50.0, "A checkpoint smaller than this share of the one before it -> CRITICAL."
    )
    settle: Duration = setting(
        60.0, "A checkpoint written within this is still being saved: not judged yet."
    )
    warn_saves: float = setting(
        2.0, "WARNING when the free space (and quota) holds fewer saves than this."
    )
    keep_last: int | None = setting(
        None, "Retention: keep the newest N complete checkpoints, delete older ones (off: keep)."
    )
    keep_every: int | None = setting(
        None, "Retention: also keep every checkpoint whose step is a multiple of this."
    )
    quota_cmd: list[str] | str | None = setting(
        None, "Quota command of the folder's filesystem (argv list or a shell-like string)."
    )
    quota_format: Literal["lfs", "mmlsquota", "simple"] = setting(
        "simple", "Output format of the quota command."
    )
    on_timeout: Literal["critical", "unknown"] = setting(
        "critical", "Status of a probe that hangs (a hung mount)."
    )
    timeout: PositiveDuration | None = setting(None, _TIMEOUT)

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None and ("/" in v or not v.strip()):
            raise ValueError("pattern is a glob of names in the folder, without '/'")
        return v

    @field_validator("files")
    @classmethod
    def _files(cls, v: list[str]) -> list[str]:
        for f in v:
            if not f or f.startswith("/") or ".." in f.split("/") or "\x00" in f:
                raise ValueError(f"files: {f!r} is not a path inside a checkpoint")
        return v

    @field_validator("marker")
    @classmethod
    def _marker(cls, v: str | None) -> str | None:
        if v is not None and (not v or v.startswith("/") or ".." in v.split("/") or "\x00" in v):
            raise ValueError(f"marker: {v!r} is not a path inside the folder")
        return v

    @field_validator("quota_cmd")
    @classmethod
    def _quota_cmd(cls, v: list[str] | str | None) -> list[str] | str | None:
        if isinstance(v, str):
            try:
                shlex.split(v)
            except ValueError as exc:
                raise ValueError(f"quota_cmd: {exc}") from None
        return v

    @model_validator(mode="after")
    def _valid(self) -> CheckpointWatch:
        if self.late < 1:
            raise ValueError("late must be at least 1 (save intervals)")
        if self.warn_saves < 1:
            raise ValueError("warn_saves must be at least 1")
        for key in ("save_every", "keep_last", "keep_every"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"{key} must be at least 1")
        if self.keep_every is not None and self.keep_last is None:
            raise ValueError("keep_every needs keep_last (retention is off without it)")
        return self


class CronWatchEntry(Section):
    """One `[[watch.cron]]` entry; what it leaves out comes from the `[cron]` section."""

    dir: str | None = setting(None, "The cron folder.", default_from="cron.dir")
    grace: Duration | None = setting(
        None,
        "CRITICAL when the last tick is older than the tick period plus this.",
        default_from="cron.grace",
    )


class WatchBase(Section):
    """What every [watch] section has; `rtool.watchdogs.registry.WatchConfig` adds one list of
    entries per registered watchdog (`[[watch.NAME]]`)."""

    timeout: PositiveDuration = setting(10.0, "Timeout of every probe.")
    prom_textfile: str | None = setting(
        None, "node_exporter textfile-collector folder that Prometheus metrics are written into."
    )

    if TYPE_CHECKING:  # the generated fields: `watch.disk` is a list of DiskWatch entries

        def __getattr__(self, name: str) -> list[Any]: ...

    def entries(self, spec: type[S]) -> list[S]:
        """The entries of the watchdog whose entry type is `spec` (typed access)."""
        for name, info in type(self).model_fields.items():
            if info.annotation == list[spec]:  # type: ignore[valid-type]
                return list(getattr(self, name))
        raise KeyError(f"no [[watch.*]] entries of type {spec.__name__}")
