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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notify.model import Notification
from rtool.core.state import StateDir, atomic_write

log = logging.getLogger(__name__)


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
        return {
            "channel": self.channel,
            "notification": self.notification.to_dict(),
            "created": self.created,
            "seq": self.seq,
            "attempts": self.attempts,
            "next_attempt": self.next_attempt,
            "last_error": self.last_error,
            "note": self.note,
            "fallback_from": self.fallback_from,
            "extra": self.extra,
        }

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
    def __init__(self, state: StateDir) -> None:
        self.dir: Path = state.file("notify", "outbox", "x").parent
        self.dir.mkdir(mode=0o700, exist_ok=True)

    def _path(self, item: Item) -> Path:
        return self.dir / f"{item.id}.json"

    def put(self, item: Item) -> bool:
        """Queue `item` (atomically). False when an item with its id is already queued."""
        path = self._path(item)
        if path.exists():
            return False
        atomic_write(path, json.dumps(item.to_dict(), sort_keys=True))
        return True

    def update(self, item: Item) -> None:
        """Store the item's new attempt count / backoff (only while it is still queued)."""
        if self._path(item).exists():
            atomic_write(self._path(item), json.dumps(item.to_dict(), sort_keys=True))

    def remove(self, item: Item) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(item))

    def contains(self, item: Item) -> bool:
        return self._path(item).exists()

    def items(self, channel: str | None = None) -> list[Item]:
        """Queued items, oldest first (optionally only those of `channel`)."""
        out = []
        for path in self.dir.glob("*.json"):
            item = self._load(path)
            if item is not None and (channel is None or item.channel == channel):
                out.append(item)
        out.sort(key=lambda i: (i.created, i.seq, i.id))
        return out

    def _load(self, path: Path) -> Item | None:
        try:
            return Item.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            return None  # delivered by another run meanwhile
        except (ValueError, KeyError, TypeError):
            bad = path.with_suffix(".corrupt")
            log.error("outbox item %s is unreadable; moved to %s", path.name, bad.name)
            with contextlib.suppress(OSError):
                os.replace(path, bad)
            return None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.items():
            out[item.channel] = out.get(item.channel, 0) + 1
        return out
