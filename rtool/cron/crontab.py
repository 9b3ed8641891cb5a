"""cron.d lines in crontab syntax (`*/15 * * * * command`, `@daily command`), with croniter.

Pure: parsing is a function of text, due-ness a function of (expression, last check, now).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime

from croniter import croniter

_ENV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_NICKNAMES = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


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
