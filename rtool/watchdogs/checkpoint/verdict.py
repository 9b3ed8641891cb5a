"""The checkpoint watchdog's verdict (pure) on what its probe saw (`Observation`): is a save
overdue, is the newest checkpoint incomplete, will the folder hold the next save, and which old
checkpoints retention removes. `Ckpt` and `Phase` live in rtool.core.checkpoints, shared with
rtool.shim."""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field
from typing import Any

from rtool.core.alert import Status
from rtool.core.checkpoints import Ckpt, Judged, Phase, newest_complete
from rtool.core.checkpoints import ago as _ago
from rtool.core.checkpoints import shown_size as _size
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.units import format_duration, format_size
from rtool.watchdogs.config import CheckpointWatch
from rtool.watchdogs.disk import Probed, Problem
from rtool.watchdogs.probes.child import parse_heartbeat

#: Heartbeat states in which the training saves (any other: no save is expected).
TRAINING = (RunState.STARTING, RunState.RUNNING, RunState.SAVING)
#: Gaps between this many of the newest checkpoints give the pace when none is configured.
PACE_WINDOW = 6
#: At most this many checkpoints are deleted in one sweep.
MAX_PRUNE = 50


@dataclass
class Observation(Probed[CheckpointWatch]):
    """One `[[watch.checkpoint]]` folder as the probe saw it."""

    folder_uid: int | None = None
    folder_mode: int | None = None
    entries: list[Ckpt] = field(default_factory=list)  # oldest first
    more: bool = False  # the folder holds more names than the probe lists
    heartbeat: Heartbeat | None = None
    heartbeat_error: str | None = None
    uid: int = 0  # rtool's own uid (retention touches only its files)
    #: The newest complete checkpoint an earlier sweep saw (the state dir): the size of the
    #: next save when the newest few are all broken (a full disk leaves empty ones behind).
    remembered: Ckpt | None = None

    def read(self, data: dict[str, Any]) -> None:
        """Take the child's scan output."""
        folder = data.get("folder") or {}
        self.folder_uid, self.folder_mode = folder.get("uid"), folder.get("mode")
        self.statvfs = data.get("statvfs")
        self.more = bool(data.get("more"))
        self.entries = [Ckpt.from_json(raw) for raw in data.get("entries") or []]
        self.heartbeat, self.heartbeat_error = parse_heartbeat(data.get("heartbeat"))


@dataclass(frozen=True)
class Pace:
    """How often the run saves: in steps and in seconds (None: not known)."""

    steps: int | None
    seconds: float | None
    source: str  # where the steps come from: "configured" or "checkpoints"


def _median_gap(values: list[float]) -> float | None:
    gaps = [b - a for a, b in itertools.pairwise(values) if b > a]
    return statistics.median(gaps) if gaps else None


def pace(judged: list[Judged], spec: CheckpointWatch, hb: Heartbeat | None) -> Pace:
    """The save interval: configured steps, else the step gap of the newest checkpoints; in
    seconds from the heartbeat's step time, else from the gaps between their write times."""
    recent = [j.ckpt for j in judged if j.phase is not Phase.WRITING][-PACE_WINDOW:]
    steps: int | None = spec.save_every
    source = "configured"
    if steps is None:
        gap = _median_gap([float(c.step) for c in recent if c.step is not None])
        steps, source = (round(gap), "checkpoints") if gap else (None, "checkpoints")
    if steps and hb is not None and hb.step_seconds:
        return Pace(steps, steps * hb.step_seconds, source)
    return Pace(steps, _median_gap([c.written for c in recent]), source)


def overdue(
    judged: list[Judged], spec: CheckpointWatch, hb: Heartbeat | None, p: Pace, now: float
) -> list[Problem]:
    """CRITICAL when the training went past `late` save intervals without a complete
    checkpoint: in steps from the heartbeat, and in time (`max_age`, else `late` intervals of
    the pace plus `settle`). Nothing is expected of a training that is not running (its
    heartbeat says stopped, finished or crashed)."""
    if hb is not None and hb.state not in TRAINING:
        return []
    newest = newest_complete(judged)
    out: list[Problem] = []
    if hb is not None and hb.step is not None and p.steps:
        base = newest.step if newest and newest.step is not None else hb.step_at_start or 0
        behind = hb.step - base
        if behind > p.steps * spec.late:
            where = f"newest {newest.name}" if newest else "none yet"
            text = (
                f"no complete checkpoint for {behind} steps (a save every {p.steps}; "
                f"{where}, training at step {hb.step})"
            )
            out.append((Status.CRITICAL, text))
    limit = spec.max_age
    if limit is None and p.seconds:  # a save takes time: `settle` on top of the pace
        limit = p.seconds * spec.late + spec.settle
    if limit and newest is not None and now - newest.written > limit:
        age = now - newest.written
        text = f"newest complete checkpoint {newest.name} is {format_duration(age)} old"
        out.append((Status.CRITICAL, f"{text} (limit {format_duration(limit)})"))
    return out


def incomplete(judged: list[Judged], now: float) -> list[Problem]:
    """CRITICAL when a settled checkpoint newer than the newest complete one is incomplete."""
    newest = newest_complete(judged)
    first = 1 + max((i for i, j in enumerate(judged) if j.phase is Phase.COMPLETE), default=-1)
    bad = [j for j in judged[first:] if j.phase in (Phase.PARTIAL, Phase.SMALL)]
    if not bad:
        return []
    j = bad[-1]
    if newest is not None:
        tail = f"newest complete {newest.name} ({_ago(now - newest.written)})"
    else:
        tail = "no complete checkpoint"
    return [(Status.CRITICAL, f"{j.ckpt.name} {j.phase.value}: {j.why}; {tail}")]


def room(o: Observation, judged: list[Judged]) -> list[Problem]:
    """Will the folder hold the next save? Free space, inodes and quota against the size and
    file count of the newest complete checkpoint (else the newest looked into)."""
    sized = [j.ckpt for j in judged if j.ckpt.detailed and j.phase is not Phase.WRITING]
    last = newest_complete(judged) or (sized[-1] if sized else None)
    if last is None or not last.size:
        return []
    out: list[Problem] = []
    st = o.statvfs or {}
    if st:
        free = st.get("bavail", 0) * (st.get("frsize", 0) or 1)
        out += _fits(free, last, o.spec.warn_saves, "")
        if st.get("files") and last.files and st.get("favail", 0) < last.files:
            text = f"{st.get('favail', 0)} inodes free, a save writes {last.files} files"
            out.append((Status.CRITICAL, text))
    q = o.quota
    if q is not None and q.limit:
        out += _fits(max(0, q.limit - q.used), last, o.spec.warn_saves, "quota: ")
    if q is not None and q.files_limit and q.files is not None and last.files:
        left = max(0, q.files_limit - q.files)
        if left < last.files:
            text = f"file quota: {left} files left, a save writes {last.files}"
            out.append((Status.CRITICAL, text))
    if o.quota_error:
        out.append((Status.UNKNOWN, f"quota: {o.quota_error}"))
    return out


def _fits(free: int, last: Ckpt, warn_saves: float, label: str) -> list[Problem]:
    need = last.size or 0
    saves = free / need
    if saves < 1:
        text = f"{label}{format_size(free)} free, the next save needs ~{_size(last)} ({last.name})"
        return [(Status.CRITICAL, text)]
    if saves < warn_saves:
        room = f"room for {int(saves)} more save(s) of ~{_size(last)}"
        text = f"{label}{format_size(free)} free: {room}"
        return [(Status.WARNING, text)]
    return []


def saves_left(o: Observation, judged: list[Judged]) -> int | None:
    last = newest_complete(judged)
    st = o.statvfs or {}
    if last is None or not last.size or not st:
        return None
    return int(st.get("bavail", 0) * (st.get("frsize", 0) or 1) // last.size)


def retention(o: Observation, judged: list[Judged]) -> tuple[list[str], str | None]:
    """(names to delete, why retention is held back). Keeps the newest `keep_last` complete
    checkpoints, everything newer (being written or incomplete), every `keep_every`-th step,
    and whatever is not yours; deletes only once the newest `keep_last` are complete."""
    spec = o.spec
    if spec.keep_last is None:
        return [], None
    problem = _untrusted(o)
    if problem:
        return [], f"retention held: the folder {problem}"
    if o.more:
        return [], "retention held: the folder holds more names than rtool lists"
    complete = [i for i, j in enumerate(judged) if j.phase is Phase.COMPLETE]
    if len(complete) < spec.keep_last:
        return [], None
    cut = complete[-spec.keep_last]
    every = spec.keep_every
    doomed = [
        j.ckpt.name
        for j in judged[:cut]
        if j.ckpt.uid == o.uid
        and not (every and j.ckpt.step is not None and j.ckpt.step % every == 0)
    ]
    return doomed[:MAX_PRUNE], None


def _untrusted(o: Observation) -> str | None:
    """Why retention must not delete in this folder (the rule of rtool.core.safeio.trusted)."""
    if o.folder_uid not in (o.uid, 0):
        return f"is owned by uid {o.folder_uid}, not by you"
    if o.folder_mode is not None and o.folder_mode & 0o022:
        return f"is writable by group or others (mode {o.folder_mode:04o}); chmod go-w it"
    return None
