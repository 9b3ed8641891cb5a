"""Checkpoint folders and files on disk for the checkpoint watchdog's tests, and a sweep."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rtool.core.state import StateDir
from rtool.watchdogs.base import CheckResult, ProbeEnv
from rtool.watchdogs.checkpoint.watchdog import CheckpointWatchdog
from rtool.watchdogs.config import CheckpointWatch

WRITER = str(Path(__file__).with_name("ckpt_writer.py"))


def age(path: Path, seconds: float) -> None:
    """Set the mtime of `path` and of everything in it to `seconds` ago."""
    t = time.time() - seconds
    items = [path, *path.rglob("*")] if path.is_dir() else [path]
    for p in items:
        os.utime(p, (t, t), follow_symlinks=False)


def shift(folder: Path, seconds: float) -> None:
    """Move every mtime under `folder` `seconds` into the past (their order kept)."""
    for p in [folder, *folder.rglob("*")]:
        t = p.lstat().st_mtime - seconds
        os.utime(p, (t, t), follow_symlinks=False)


def folder_ckpt(
    root: Path,
    name: str,
    size: int = 4096,
    *,
    files: tuple[str, ...] = ("model.bin", "optimizer.bin"),
    marker: str | None = "COMPLETE",
    old: float = 0.0,
) -> Path:
    """A checkpoint folder `root/name` holding `files` of `size` bytes each (and `marker`),
    last written `old` seconds ago."""
    d = root / name
    d.mkdir(parents=True)
    for f in files:
        (d / f).write_bytes(b"\0" * size)
    if marker:
        (d / marker).touch()
    age(d, old)
    return d


def file_ckpt(root: Path, name: str, size: int = 4096, old: float = 0.0) -> Path:
    p = root / name
    p.write_bytes(b"\0" * size)
    age(p, old)
    return p


def sweep(state: StateDir, timeout: float = 10.0, **spec: Any) -> CheckResult:
    """One check of one folder, with the watchdog's real probe (its child process)."""
    wd = CheckpointWatchdog([CheckpointWatch(**spec)], timeout)
    [result] = wd.check(wd.probe(ProbeEnv(None, state)), time.time())
    return result


def start_writer(cwd: Path, **env: str) -> subprocess.Popen[str]:
    """ckpt_writer.py as its own process in `cwd` (CKW_* and RTOOL_* from `env`)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("RTOOL_", "CKW_"))}
    full.update(env)
    return subprocess.Popen(
        [sys.executable, WRITER],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
