"""Removing old log files so they never eat the inode quota."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)


def expired(files: Iterable[tuple[Path, float]], now: float, keep: float) -> list[Path]:
    """The files (path, mtime) last modified more than `keep` seconds before `now` (pure)."""
    return [path for path, mtime in files if now - mtime > keep]


def log_files(logs: Path) -> list[tuple[Path, float]]:
    """(path, mtime) of every regular file under `logs` (symlinks are not followed)."""
    found = []
    for dirpath, _dirs, names in os.walk(logs):
        for name in names:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if not path.is_symlink():
                found.append((path, st.st_mtime))
    return found


def remove_old_logs(logs: Path, now: float, keep: float) -> list[Path]:
    """Remove log files older than `keep`; returns what was removed."""
    removed = []
    for path in expired(log_files(logs), now, keep):
        try:
            path.unlink()
            removed.append(path)
        except OSError as exc:
            log.warning("cannot remove old log %s: %s", path, exc.strerror)
    return removed
