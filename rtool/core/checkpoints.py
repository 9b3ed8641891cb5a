"""Checkpoints and how complete they are: the rules the checkpoint watchdog judges a folder
by (rtool/watchdogs/checkpoint/) and `rtool.shim.latest_checkpoint` resumes by. Standard
library and rtool.core only; the scan itself is rtool/core/ckptscan.py."""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from typing import Any

from rtool.core.units import format_duration, format_size


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


@dataclass(frozen=True)
class Judged:
    ckpt: Ckpt
    phase: Phase
    why: str = ""


def judge(
    entries: list[Ckpt],
    settle: float,
    min_size: float,
    now: float,
    remembered: Ckpt | None = None,
) -> list[Judged]:
    """Each checkpoint's phase, oldest first: written within `settle` seconds is still being
    written; a required file or the marker missing, or empty, is incomplete; smaller than
    `min_size` % of the complete one before it is too small. An older one not looked into
    this time is complete when an earlier sweep found it so (its record `remembered`, sizes
    included)."""
    out: list[Judged] = []
    before: Ckpt | None = None
    for c in entries:
        if not c.detailed and remembered is not None and c.name == remembered.name:
            out.append(Judged(remembered, Phase.COMPLETE))
            before = remembered
        elif not c.detailed:
            out.append(Judged(c, Phase.UNSEEN))
        elif c.written > now - settle:
            out.append(Judged(c, Phase.WRITING, f"written {ago(now - c.written)}"))
        elif c.missing:
            out.append(Judged(c, Phase.PARTIAL, "missing " + _names(c.missing)))
        elif not c.size:
            out.append(Judged(c, Phase.PARTIAL, "empty"))
        elif before and before.size and (c.size or 0) < before.size * min_size / 100:
            share = (c.size or 0) / before.size * 100
            why = f"{shown_size(c)}, {share:.0f}% of {before.name} ({shown_size(before)})"
            out.append(Judged(c, Phase.SMALL, why))
        else:
            out.append(Judged(c, Phase.COMPLETE))
            before = c
    return out


def _names(items: tuple[str, ...]) -> str:
    shown = ", ".join(items[:4])
    return shown + (f" and {len(items) - 4} more" if len(items) > 4 else "")


def ago(seconds: float) -> str:
    return f"{format_duration(max(0.0, seconds))} ago"


def shown_size(c: Ckpt) -> str:
    return format_size(c.size or 0)


def newest_complete(judged: list[Judged]) -> Ckpt | None:
    return next((j.ckpt for j in reversed(judged) if j.phase is Phase.COMPLETE), None)
