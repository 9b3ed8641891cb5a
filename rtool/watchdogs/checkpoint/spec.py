"""The `[[watch.checkpoint]]` entry: one checkpoint folder of a run (docs/watchdogs.md).

```toml
[[watch.checkpoint]]
path = "/scratch/alice/run/ckpt"       # step_000123/, checkpoint-123/, *.ckpt, step_123.pt ...
heartbeat = "/scratch/alice/run/ckpt/heartbeat.json"   # the pace: step and step time
save_every = 500                       # steps (default: the gap between the newest ones)
marker = "{NAME}/COMPLETE"             # or files = ["model.safetensors", "optimizer.pt"]
keep_last = 3                          # retention (off by default), and keep_every = 10000
```
"""

from __future__ import annotations

import fnmatch
import shlex
from typing import Literal

from pydantic import field_validator, model_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration, Percent, PositiveDuration, Section


class CheckpointWatch(Section):
    """One `[[watch.checkpoint]]` entry."""

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
    timeout: PositiveDuration | None = setting(
        None, "Timeout of this entry's probes (default: [watch] timeout)."
    )

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None and ("/" in v or not v.strip()):
            raise ValueError("pattern is a glob of names in the folder, without '/'")
        if v is not None:
            fnmatch.translate(v)
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
