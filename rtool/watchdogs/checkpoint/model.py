"""What the checkpoint probe saw: the checkpoints of one folder, by name and size (typed;
`Ckpt` and `Phase` live in rtool.core.checkpoints, shared with rtool.shim)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rtool.core.checkpoints import Ckpt
from rtool.core.heartbeat import Heartbeat
from rtool.watchdogs.probes.child import parse_heartbeat

if TYPE_CHECKING:
    from rtool.watchdogs.checkpoint.spec import CheckpointWatch
    from rtool.watchdogs.quota import Quota


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
