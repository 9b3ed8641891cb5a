"""The cron folder: layout, and scanning it for jobs.

- `cron.{hourly,daily,weekly}/*.slurm`: submitted with sbatch (their own resources);
- `cron.{hourly,daily,weekly}/<executable>`: run inside the scheduler's job, with a timeout;
- `cron.d/<file>`: crontab lines;
- anything else is skipped with a warning (examples, dotfiles, backups silently).
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rtool.core.safeio import UnsafeFileError, read_bounded, trust_problem
from rtool.cron.crontab import CronLine, parse_cron_file
from rtool.cron.slots import PERIODS

SUBDIRS = (*(f"cron.{p}" for p in PERIODS), "cron.d", "logs")
_QUIET_SUFFIXES = (".example", ".disabled", ".bak", ".swp", ".orig", "~", ".md", ".txt")

Kind = Literal["exec", "slurm", "line"]
MAX_CRONTAB = 1024 * 1024
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    name: str  # "cron.hourly/check.sh", "cron.d/backup:3": the alert key is cron:<name>
    kind: Kind
    period: str | None  # hourly / daily / weekly; None for cron.d lines
    path: Path
    line: CronLine | None = None


@dataclass(frozen=True)
class Refused:
    """A job file not run because another user could have written it."""

    name: str  # "cron.hourly/check.sh", "cron.d/backup"
    path: Path
    why: str


@dataclass
class Scan:
    jobs: list[Job] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    def by_period(self, period: str) -> list[Job]:
        return [j for j in self.jobs if j.period == period]

    @property
    def lines(self) -> list[Job]:
        return [j for j in self.jobs if j.kind == "line"]

    def find(self, name: str) -> list[Job]:
        """Jobs whose full name, or file name, is `name`."""
        exact = [j for j in self.jobs if j.name == name]
        return exact or [j for j in self.jobs if j.path.name == name or j.name.endswith("/" + name)]


def quietly_ignored(filename: str) -> bool:
    lower = filename.lower()
    return lower.startswith((".", "readme")) or lower.endswith(_QUIET_SUFFIXES)


def classify(path: Path) -> Kind | str:
    """`slurm`, `exec`, or the reason the file is skipped."""
    try:
        st = path.lstat()
    except OSError as exc:
        return f"cannot stat: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        st = path.stat() if path.exists() else st
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if path.suffix == ".slurm":
        return "slurm"
    if os.access(path, os.X_OK):
        return "exec"
    return "not executable and not *.slurm (chmod +x it to run it)"


def scan(root: Path) -> Scan:
    """Every job under the cron folder `root`, in run-parts order (sorted by name)."""
    result = Scan()
    for period in PERIODS:
        folder = root / f"cron.{period}"
        for path in _entries(folder):
            kind = classify(path)
            name = f"cron.{period}/{path.name}"
            if kind in ("slurm", "exec") and _refuse(result, name, path):
                continue
            if kind in ("slurm", "exec"):
                result.jobs.append(Job(name, kind, period, path))  # type: ignore[arg-type]
            else:
                result.warnings.append(f"{name}: skipped ({kind})")
    for path in _entries(root / "cron.d"):
        if not path.is_file():
            result.warnings.append(f"cron.d/{path.name}: skipped (not a regular file)")
            continue
        if _refuse(result, f"cron.d/{path.name}", path):
            continue
        try:
            text = read_bounded(path, MAX_CRONTAB)
        except (OSError, UnsafeFileError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            result.warnings.append(f"cron.d/{path.name}: cannot read ({why})")
            continue
        lines, problems = parse_cron_file(path.name, text)
        result.jobs.extend(Job(ln.name, "line", None, path, ln) for ln in lines)
        result.warnings.extend(
            f"cron.d/{p.file}:{p.lineno}: skipped ({p.message})" for p in problems
        )
    return result


def _refuse(result: Scan, name: str, path: Path) -> bool:
    """Record (and return True for) a job file that is not the user's or root's alone: owned by
    someone else, or writable by group or others (they could make it run anything as you)."""
    try:
        link = path.lstat()
        problem = trust_problem(path)
        if problem is None and stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.getuid(), 0):
            problem = f"it is a symlink owned by uid {link.st_uid}"
    except OSError as exc:
        problem = f"cannot stat it: {exc.strerror}"
    if problem is None:
        return False
    result.refused.append(Refused(name, path, problem))
    result.warnings.append(f"{name}: not run ({problem})")
    return True


def _entries(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:  # unreadable: its jobs cannot run, say why
        log.warning("cannot list %s: %s", folder, exc.strerror)
        return []
    return [folder / n for n in names if not quietly_ignored(n)]
