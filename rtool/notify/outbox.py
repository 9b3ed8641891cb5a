"""The outbox: notifications not yet accepted by their channel's server.

One JSON file per (notification, channel) in `<state>/notify/outbox/`, written atomically
before any send is tried and removed only after the server accepted it. So a process killed
mid-send loses nothing; a kill after the server accepted but before the file was removed sends
that one notification twice on the next run (at-least-once).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rtool.core.safeio import move_aside, read_json_file
from rtool.core.state import StateDir, atomic_write
from rtool.notify.channels.notification import Notification

log = logging.getLogger(__name__)
MAX_ITEM_BYTES = 1024 * 1024


@dataclass
class Item:
    channel: str
    notification: Notification
    created: float
    seq: int = 0  # order among items created at the same time
    attempts: int = 0
    next_attempt: float = 0.0
    last_error: str | None = None
    note: str | None = None  # e.g. why it came to the fallback channel
    fallback_from: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        base = f"{self.notification.id}.{self.channel}"
        return f"{base}.from-{self.fallback_from}" if self.fallback_from else base

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the notification too: Notification.to_dict is asdict

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Item:
        return cls(
            channel=str(data["channel"]),
            notification=Notification.from_dict(data["notification"]),
            created=float(data["created"]),
            seq=int(data.get("seq", 0)),
            attempts=int(data.get("attempts", 0)),
            next_attempt=float(data.get("next_attempt", 0.0)),
            last_error=data.get("last_error"),
            note=data.get("note"),
            fallback_from=data.get("fallback_from"),
            extra=dict(data.get("extra") or {}),
        )


class Outbox:
    """The outbox folder. When the state dir cannot be written (disk full, read-only), items
    are kept in memory for this process (`StateDir.unsaved_outbox`), so the alert is still sent
    this run; the failed write is recorded in `StateDir.problems`."""

    def __init__(self, state: StateDir) -> None:
        self.state = state
        self.dir: Path = state.file("notify", "outbox", "x").parent
        with contextlib.suppress(OSError):
            self.dir.mkdir(mode=0o700, exist_ok=True)
        memory = getattr(state, "unsaved_outbox", None)
        if memory is None:
            memory = {}
            state.unsaved_outbox = memory  # type: ignore[attr-defined]
        self.memory: dict[str, Item] = memory

    def _path(self, item: Item) -> Path:
        return self.dir / f"{item.id}.json"

    def _write(self, item: Item) -> None:
        path = self._path(item)
        try:
            atomic_write(path, json.dumps(item.to_dict(), sort_keys=True))
            self.memory.pop(item.id, None)
        except OSError as exc:
            self.state.write_failed(path, exc)  # re-raises what is not a disk problem
            self.memory[item.id] = item

    def put(self, item: Item) -> bool:
        """Queue `item` (atomically). False when an item with its id is already queued."""
        if self.contains(item):
            return False
        self._write(item)
        return True

    def update(self, item: Item) -> None:
        """Store the item's new attempt count / backoff (only while it is still queued)."""
        if self.contains(item):
            self._write(item)

    def remove(self, item: Item) -> None:
        self.memory.pop(item.id, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(item))

    def contains(self, item: Item) -> bool:
        return item.id in self.memory or os.path.lexists(self._path(item))

    def items(self, channel: str | None = None) -> list[Item]:
        """Queued items, oldest first (optionally only those of `channel`)."""
        out = [i for i in self.memory.values() if channel is None or i.channel == channel]
        for path in self.dir.glob("*.json"):
            if path.stem in self.memory:
                continue
            item = self._load(path)
            if item is not None and (channel is None or item.channel == channel):
                out.append(item)
        out.sort(key=lambda i: (i.created, i.seq, i.id))
        return out

    def _load(self, path: Path) -> Item | None:
        """The item in `path`; a corrupt one (truncated, binary, wrong type, a folder) is moved
        aside to `<name>.corrupt-<time>` with a warning, and the others go on."""
        data = read_json_file(path, MAX_ITEM_BYTES)
        if data is None:
            return None  # missing (delivered by another run meanwhile) or moved aside
        try:
            return Item.from_dict(data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            move_aside(path, f"not an outbox item: {type(exc).__name__} {exc}")
            return None

    def counts(self) -> dict[str, int]:
        return dict(Counter(item.channel for item in self.items()))
