"""What the checkpoint probe saw: the checkpoints of one folder, by name and size (typed)."""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError

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

    @staticmethod
    def from_json(d: dict[str, Any], required: list[str]) -> Ckpt:
        """An entry of the child's scan; only the `required` files count as missing."""
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
        missing = tuple(str(m) for m in detail.get("missing") or [] if _counted(m, required))
        return dataclasses.replace(
            base,
            size=int(detail.get("size") or 0),
            files=int(detail.get("files") or 0),
            newest=_finite(detail.get("newest")),
            missing=missing,
            truncated=bool(detail.get("truncated")),
        )


def _counted(missing: Any, required: list[str]) -> bool:
    """Whether a file the child found missing counts for this checkpoint: a default file
    (Hugging Face's) only for the checkpoints it is the default of; the rest always."""
    return str(missing) in required or str(missing) not in DEFAULT_FILES


#: Files the probe checks for when none are configured (Hugging Face's completion).
DEFAULT_FILES = ("trainer_state.json",)


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

    def read(self, data: dict[str, Any]) -> None:
        """Take the child's scan output."""
        folder = data.get("folder") or {}
        self.folder_uid, self.folder_mode = folder.get("uid"), folder.get("mode")
        self.folder_mtime = folder.get("mtime")
        self.statvfs = data.get("statvfs")
        self.more = bool(data.get("more"))
        for raw in data.get("entries") or []:
            is_dir = bool(raw.get("dir"))
            self.entries.append(Ckpt.from_json(raw, self.spec.required_files(raw["name"], is_dir)))
        self.heartbeat, self.heartbeat_error = parse_heartbeat(data.get("heartbeat"))


def parse_heartbeat(raw: Any) -> tuple[Heartbeat | None, str | None]:
    """The heartbeat the child read (a decoded JSON object), or why it is not one."""
    if raw is None:
        return None, None
    if isinstance(raw, dict) and raw.get("_invalid"):
        return None, f"heartbeat: {raw.get('why') or 'not JSON'}"
    try:
        return Heartbeat.from_dict(raw), None
    except HeartbeatFormatError as exc:
        return None, str(exc)
