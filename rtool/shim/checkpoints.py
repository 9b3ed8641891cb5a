"""Resume from the newest checkpoint that was completely written (docs/guide/resume.md).

    from rtool.shim import latest_checkpoint

    path = latest_checkpoint("ckpt/", marker="{NAME}/COMPLETE", load=check_loads)
    state = load(path) if path is not None else fresh()

Complete by the checkpoint watchdog's rules, scanned by the same code (rtool.core.checkpoints,
ckptscan). Newer checkpoints that are incomplete, or that `load(path)` refused by raising, are
moved aside by rank 0 (`<name>.set-aside-<time>.incomplete`, which neither scan nor the
watchdog's retention looks at: nothing is deleted) and named in the heartbeat (`set_aside`,
`resumed_from`).
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtool.core import ckptscan
from rtool.core.checkpoints import Ckpt, Judged, Phase, judge

log = logging.getLogger(__name__)

#: The newest checkpoints looked into (sizes, files) before an older complete one is found.
DETAIL = 4
#: What a set-aside checkpoint's new name ends with (the scan skips such names).
SUFFIX = ".incomplete"


@dataclass(frozen=True)
class SetAside:
    """A checkpoint that was moved aside: its name, its new name, and why."""

    name: str
    moved_to: str | None  # None: not moved (not rank 0, or the rename failed)
    why: str

    def __str__(self) -> str:
        where = f" -> {self.moved_to}" if self.moved_to else ""
        return f"{self.name} ({self.why}){where}"


@dataclass(frozen=True)
class Resume:
    """What `latest_checkpoint` found: the checkpoint to resume from, and what it set aside."""

    folder: str
    path: Path | None
    set_aside: tuple[SetAside, ...] = ()

    def heartbeat_fields(self) -> dict[str, Any]:
        return {
            "resumed_from": self.path.name if self.path is not None else None,
            "checkpoint_folder": os.path.abspath(self.folder),
            "set_aside": "; ".join(str(s) for s in self.set_aside) or None,
        }


_last: Resume | None = None


def last_resume() -> Resume | None:
    """The newest `latest_checkpoint` answer of this process (the heartbeat reports it)."""
    return _last


def latest_checkpoint(
    folder: str | os.PathLike[str],
    *,
    pattern: str | None = None,
    files: Sequence[str] = (),
    marker: str | None = None,
    min_size: float = 50.0,
    settle: float = 0.0,
    load: Callable[[Path], object] | None = None,
    move_aside: bool | None = None,
) -> Path | None:
    """The newest complete checkpoint in `folder` (None: none yet). `pattern`, `files`,
    `marker` and `min_size` mean what they mean in `[[watch.checkpoint]]`; `settle`: a
    checkpoint written within this many seconds is not judged (0 at a launch: no save of
    this run is under way). `load(path)`, when given, must raise when the checkpoint does
    not load; the next older complete one is then tried. `move_aside` (default: on rank 0
    only) renames the incomplete and unloadable ones newer than the answer."""
    global _last
    resume = find(folder, pattern, files, marker, min_size, settle, load, move_aside)
    _last = resume
    for s in resume.set_aside:
        done = "set aside" if s.moved_to else "skipped"
        log.warning("rtool.shim: checkpoint %s %s: %s", s.name, done, s.why)
    if resume.set_aside:
        log.warning("rtool.shim: resuming from %s", resume.path or "the start (no checkpoint)")
    return resume.path


def find(
    folder: str | os.PathLike[str],
    pattern: str | None,
    files: Sequence[str],
    marker: str | None,
    min_size: float,
    settle: float,
    load: Callable[[Path], object] | None,
    move_aside: bool | None,
) -> Resume:
    base = Path(folder)
    if move_aside is None:
        move_aside = _rank() == 0
    aside: list[SetAside] = []
    rejected: set[str] = set()
    req: dict[str, Any] = {"path": os.fspath(base), "pattern": pattern, "files": list(files)}
    req.update(marker=marker, detail=DETAIL, settle=settle)  # the scan's (rtool.core.ckptscan)
    while True:
        judged = _judged(base, req, min_size, settle)
        if judged is None:
            return Resume(os.fspath(base), None)
        unseen = False
        for j in reversed(judged):
            if j.ckpt.name in rejected:
                continue
            if j.phase is Phase.UNSEEN:
                unseen = True
                break
            why = _not_resumable(j, base, load)
            if why is None:
                return Resume(os.fspath(base), base / j.ckpt.name, tuple(aside))
            if why:  # "": skipped without a word (being written, another user's)
                rejected.add(j.ckpt.name)
                moved = _move_aside(base, j.ckpt.name) if move_aside else None
                aside.append(SetAside(j.ckpt.name, moved, why))
        if not unseen or req["detail"] >= ckptscan.DETAIL_CAP:
            return Resume(os.fspath(base), None, tuple(aside))
        req["detail"] *= 4  # older ones were not looked into: look further back


def _judged(base: Path, req: dict[str, Any], min_size: float, settle: float) -> list[Judged] | None:
    """The folder's checkpoints judged, oldest first (None: no such folder)."""
    try:
        scanned = ckptscan.scan(req)
    except FileNotFoundError:
        return None
    if not scanned.get("ok"):
        raise OSError(f"{base}: {scanned.get('error')}")
    entries = [Ckpt.from_json(e) for e in scanned["entries"]]
    return judge(entries, settle, min_size, time.time())


def _not_resumable(j: Judged, base: Path, load: Callable[[Path], object] | None) -> str | None:
    """None when `j` is the checkpoint to resume from; else why not ("": say nothing)."""
    if j.ckpt.uid not in (os.getuid(), 0):
        return ""
    if j.phase in (Phase.UNSEEN, Phase.WRITING):
        return ""
    if j.phase is not Phase.COMPLETE:
        return f"{j.phase.value}: {j.why}"
    if load is None:
        return None
    try:
        load(base / j.ckpt.name)
    except Exception as exc:  # any failure to load is the verdict
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        return f"failed to load: {type(exc).__name__}" + (f": {text}" if text else "")
    return None


def _move_aside(base: Path, name: str) -> str | None:
    """Rename `name` inside `base` (through the folder's descriptor, never following a link)
    to `<name>.set-aside-<time>.incomplete`; the new name, or None when it could not."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(base, flags)
    except OSError as exc:
        log.warning("rtool.shim: cannot open %s to set %s aside: %s", base, name, exc.strerror)
        return None
    try:
        st = os.lstat(name, dir_fd=fd)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            return None
        for n in range(100):
            target = f"{name}.set-aside-{stamp}{f'-{n}' if n else ''}{SUFFIX}"
            try:
                os.lstat(target, dir_fd=fd)
            except FileNotFoundError:
                os.rename(name, target, src_dir_fd=fd, dst_dir_fd=fd)
                return target
    except OSError as exc:
        log.warning("rtool.shim: cannot set %s aside: %s", base / name, exc.strerror)
    finally:
        os.close(fd)
    return None


def _rank() -> int:
    for key in ("RANK", "SLURM_PROCID"):
        try:
            return int(os.environ[key])
        except (KeyError, ValueError):
            continue
    return 0
