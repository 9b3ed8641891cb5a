"""The cron folder: layout, and scanning it for jobs.

- `cron.{hourly,daily,weekly}/*.slurm`: submitted with sbatch (their own resources);
- `cron.{hourly,daily,weekly}/<executable>`: run inside the scheduler's job, with a timeout;
- `cron.d/<file>`: crontab lines (`*/15 * * * * command`, `@daily command`), with croniter;
  parsing is a pure function of text, due-ness of (expression, last check, now);
- anything else is skipped with a warning (examples, dotfiles, backups silently).

Every file is read ONCE, while the folder is scanned, through the descriptor whose owner and
mode were checked (rtool.core.fdwalk); the job later runs from that content (a private copy,
see runner.py), never from the path again. A folder others can write into is refused whole.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from croniter import croniter

from rtool.core import fdwalk
from rtool.core.safeio import DEFAULT_LIMIT, UnsafeFileError, trust_problem
from rtool.cron.slots import PERIODS

SUBDIRS = (*(f"cron.{p}" for p in PERIODS), "cron.d", "logs")
_QUIET_SUFFIXES = (".example", ".disabled", ".bak", ".swp", ".orig", "~", ".md", ".txt")
_ENV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_NICKNAMES = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

Kind = Literal["exec", "slurm", "line"]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    name: str  # "cron.hourly/check.sh", "cron.d/backup:3": the alert key is cron:<name>
    kind: Kind
    period: str | None  # hourly / daily / weekly; None for cron.d lines
    path: Path
    line: CronLine | None = None
    #: The file's bytes as checked during the scan: what runs (None for cron.d lines).
    content: bytes | None = field(default=None, repr=False, compare=False)


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


def classify(name: str, st: os.stat_result) -> Kind | str:
    """`slurm`, `exec`, or the reason the file is skipped (from the checked descriptor)."""
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if name.endswith(".slurm"):
        return "slurm"
    if st.st_mode & stat.S_IXUSR:
        return "exec"
    return "not executable and not *.slurm (chmod +x it to run it)"


def scan(root: Path) -> Scan:
    """Every job under the cron folder `root`, in run-parts order (sorted by name)."""
    result = Scan()
    rootfd = _folder(result, root, "", root.name or str(root))
    if rootfd is None:
        return result
    os.close(rootfd)
    for period in PERIODS:
        for name, data, st in _files(result, root, f"cron.{period}"):
            job = f"cron.{period}/{name}"
            kind = classify(name, st)
            if kind in ("slurm", "exec"):
                path = root / f"cron.{period}" / name
                result.jobs.append(Job(job, kind, period, path, None, data))  # type: ignore[arg-type]
            else:
                result.warnings.append(f"{job}: skipped ({kind})")
    for name, data, _st in _files(result, root, "cron.d"):
        lines, problems = parse_cron_file(name, data.decode("utf-8", errors="replace"))
        path = root / "cron.d" / name
        result.jobs.extend(Job(ln.name, "line", None, path, ln) for ln in lines)
        result.warnings.extend(
            f"cron.d/{p.file}:{p.lineno}: skipped ({p.message})" for p in problems
        )
    return result


def _refuse(result: Scan, name: str, path: Path, problem: str) -> None:
    result.refused.append(Refused(name, path, problem))
    result.warnings.append(f"{name}: not run ({problem})")


def _folder(result: Scan, root: Path, sub: str, shown: str = "") -> int | None:
    """The descriptor of `root/sub`, walked from / (rtool.core.fdwalk); a folder that others
    can write into (even with the sticky bit: they could add a job) is refused whole."""
    where, shown = root / sub if sub else root, shown or sub
    try:
        fd = fdwalk.open_dir(where, check_last=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except UnsafeFileError as exc:
        _refuse(result, shown, where, str(exc).removeprefix("refusing "))
        return None
    except OSError as exc:  # unreadable: its jobs cannot run, say why
        log.warning("cannot list %s: %s", where, exc.strerror)
        return None
    problem = trust_problem(where, os.fstat(fd))
    if problem:
        os.close(fd)
        _refuse(result, shown, where, f"the folder {problem.removeprefix('it ')}")
        return None
    return fd


def _files(result: Scan, root: Path, sub: str) -> list[tuple[str, bytes, os.stat_result]]:
    """(name, bytes, fstat) of each trusted regular file in `root/sub`, sorted by name; each
    read through the descriptor that was checked (a symlink of yours: its target walked)."""
    dirfd = _folder(result, root, sub)
    if dirfd is None:
        return []
    out = []
    try:
        for name in sorted(os.listdir(dirfd)):
            if quietly_ignored(name):
                continue
            got = _read_one(result, root, sub, name, dirfd)
            if got is not None:
                out.append((name, *got))
    finally:
        os.close(dirfd)
    return out


def _read_one(
    result: Scan, root: Path, sub: str, name: str, dirfd: int
) -> tuple[bytes, os.stat_result] | None:
    path, job = root / sub / name, f"{sub}/{name}"
    try:
        link = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        if stat.S_ISLNK(link.st_mode):
            if link.st_uid not in (os.getuid(), 0):
                _refuse(result, job, path, f"it is a symlink owned by uid {link.st_uid}")
                return None
            return fdwalk.read_checked(os.path.realpath(path), DEFAULT_LIMIT)
        if not stat.S_ISREG(link.st_mode):
            result.warnings.append(f"{job}: skipped (not a regular file)")
            return None
        fd, st = fdwalk.open_at(dirfd, name, str(path))
        try:
            return fdwalk.read_fd(fd, str(path), DEFAULT_LIMIT), st
        finally:
            os.close(fd)
    except UnsafeFileError as exc:
        text = str(exc)
        if text.startswith("refusing "):
            _refuse(result, job, path, text.split(": ", 1)[-1])
        else:
            result.warnings.append(f"{job}: skipped ({text})")
    except OSError as exc:
        result.warnings.append(f"{job}: cannot read ({exc.strerror})")
    return None


@dataclass(frozen=True)
class CronLine:
    file: str  # the cron.d file name
    lineno: int
    expr: str  # five fields or an @nickname
    command: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"cron.d/{self.file}:{self.lineno}"

    @property
    def key(self) -> str:
        """State key: stable while the line's text is unchanged (even if it moves)."""
        digest = hashlib.sha256(f"{self.file}\0{self.expr}\0{self.command}".encode()).hexdigest()
        return f"{self.file}:{digest[:12]}"


@dataclass(frozen=True)
class LineProblem:
    file: str
    lineno: int
    message: str


def parse_cron_file(name: str, text: str) -> tuple[list[CronLine], list[LineProblem]]:
    """The lines of one cron.d file and the problems found (each skipped with a warning).

    Blank lines and `#` comments are ignored; `NAME=value` lines set the environment of the
    lines that follow.
    """
    lines: list[CronLine] = []
    problems: list[LineProblem] = []
    env: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _ENV_RE.match(line)
        if m:
            env[m.group(1)] = _unquote(m.group(2))
            continue
        if line.startswith("@"):
            nick, _, command = line.partition(" ")
            expr = nick
            if nick not in _NICKNAMES:
                problems.append(LineProblem(name, lineno, f"unsupported schedule {nick!r}"))
                continue
        else:
            parts = line.split(None, 5)
            if len(parts) < 6:
                problems.append(LineProblem(name, lineno, "expected 5 time fields and a command"))
                continue
            expr, command = " ".join(parts[:5]), parts[5]
        command = command.strip()
        if not command:
            problems.append(LineProblem(name, lineno, "no command"))
            continue
        if not croniter.is_valid(expr):
            problems.append(LineProblem(name, lineno, f"invalid schedule {expr!r}"))
            continue
        lines.append(CronLine(name, lineno, expr, command, dict(env)))
    return lines, problems


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def next_fire(expr: str, after: float) -> float:
    """The first time strictly after `after` (epoch seconds, local time zone) `expr` fires."""
    start = datetime.fromtimestamp(after).astimezone()
    return float(croniter(expr, start).get_next(float))


def is_due(expr: str, last_check: float, now: float) -> bool:
    """True when `expr` fired at least once in (last_check, now]: runs once, however many."""
    return next_fire(expr, last_check) <= now
