"""What the checkpoint probe saw: the checkpoints of one folder, by name and size (typed)."""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rtool.core.heartbeat import Heartbeat
from rtool.watchdogs.probes.child import parse_heartbeat

if TYPE_CHECKING:
    from rtool.watchdogs.checkpoint.spec import CheckpointWatch
    from rtool.watchdogs.quota import Quota


class Phase(enum.Enum):
    """How complete a checkpoint is."""

    COMPLETE = "complete"
    WRITING = "being written"  # changed within `settle`: not judged yet
    PARTIAL = "incomplete"  # settled, but a required file or the marker is missing
    SMALL = "too small"  # settled, far smaller than the complete one before it
    UNSEEN = "not looked into"  # older than the newest few: only its name is known


@dataclass(frozen=True)
class Ckpt:
    """One checkpoint (a folder or a file). Sizes are known for the newest few only."""

    name: str
    step: int | None
    is_dir: bool
    uid: int
    mtime: float
    size: int | None = None
    files: int | None = None
    newest: float | None = None  # the newest mtime inside it
    missing: tuple[str, ...] = ()
    truncated: bool = False  # more files than the probe counts

    @property
    def detailed(self) -> bool:
        return self.size is not None

    @property
    def written(self) -> float:
        """When it was last written (the newest mtime inside a folder)."""
        return self.newest if self.newest is not None else self.mtime

    def to_state(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "missing"}

    @staticmethod
    def from_state(d: Any) -> Ckpt | None:
        """A checkpoint remembered in the state dir (None when it is not a valid record)."""
        try:
            return Ckpt(
                name=str(d["name"]),
                step=int(d["step"]) if d.get("step") is not None else None,
                is_dir=bool(d.get("is_dir")),
                uid=int(d.get("uid", -1)),
                mtime=_finite(d.get("mtime")),
                size=int(d["size"]),
                files=int(d.get("files") or 0),
                newest=_finite(d.get("newest")),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    @staticmethod
    def from_json(d: dict[str, Any]) -> Ckpt:
        """An entry of the child's scan."""
        detail = d.get("detail") if isinstance(d.get("detail"), dict) else None
        step = d.get("step")
        base = Ckpt(
            name=str(d["name"]),
            step=step if isinstance(step, int) else None,
            is_dir=bool(d.get("dir")),
            uid=int(d.get("uid", -1)),
            mtime=_finite(d.get("mtime")),
        )
        if detail is None:
            return base
        missing = tuple(str(m) for m in detail.get("missing") or [])
        return dataclasses.replace(
            base,
            size=int(detail.get("size") or 0),
            files=int(detail.get("files") or 0),
            newest=_finite(detail.get("newest")),
            missing=missing,
            truncated=bool(detail.get("truncated")),
        )


def _finite(value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return 0.0
    return x if math.isfinite(x) else 0.0


@dataclass
class Observation:
    """One `[[watch.checkpoint]]` folder as the probe saw it."""

    spec: CheckpointWatch
    timeout: float
    mount: str = "/"
    folder_uid: int | None = None
    folder_mode: int | None = None
    folder_mtime: float | None = None
    statvfs: dict[str, int] | None = None
    entries: list[Ckpt] = field(default_factory=list)  # oldest first
    more: bool = False  # the folder holds more names than the probe lists
    heartbeat: Heartbeat | None = None
    heartbeat_error: str | None = None
    error: str | None = None
    timed_out: bool = False
    stuck: dict[str, Any] | None = None
    quota: Quota | None = None
    quota_error: str | None = None
    uid: int = 0  # rtool's own uid (retention touches only its files)
    #: The newest complete checkpoint an earlier sweep saw (the state dir): the size of the
    #: next save when the newest few are all broken (a full disk leaves empty ones behind).
    remembered: Ckpt | None = None

    def read(self, data: dict[str, Any]) -> None:
        """Take the child's scan output."""
        folder = data.get("folder") or {}
        self.folder_uid, self.folder_mode = folder.get("uid"), folder.get("mode")
        self.folder_mtime = folder.get("mtime")
        self.statvfs = data.get("statvfs")
        self.more = bool(data.get("more"))
        self.entries = [Ckpt.from_json(raw) for raw in data.get("entries") or []]
        self.heartbeat, self.heartbeat_error = parse_heartbeat(data.get("heartbeat"))
