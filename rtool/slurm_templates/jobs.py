"""Validated job options, one dataclass per shipped template, and their renderers.

Constructing a job validates every value (raises `SpecError` with one line); rendering it
cannot inject anything into the shell because the templates only print quoted values.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rtool.slurm_templates import specs
from rtool.slurm_templates.renderer import Quoted, ShellCode, render, sbatch_quote

_BEGIN = re.compile(
    r"^(?:now(?:\+\d+(?:seconds|minutes|hours|days|weeks)?)?"
    r"|\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2})?)?"
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:AM|PM)?"
    r"|midnight|noon|elevenses|fika|teatime|today|tomorrow)$",
    re.IGNORECASE | re.ASCII,
)
_OPTION = re.compile(r"^[a-z][a-z-]*$")
_RAW_OPTION = re.compile(r"^(?:--[a-z][a-z0-9-]*(?:=.*)?|-[A-Za-z](?:.*)?)$", re.ASCII)
#: How to fix a missing `self_command`, as the batch script says it (a job kind adds its way).
INSTALL_RTOOL = (
    "install rtool where every compute node sees it (a virtualenv on a shared filesystem)"
)


def validate_begin(value: str) -> str:
    """An sbatch `--begin` value: `now+60`, `2025-01-31T16:00:00`, `16:00`, `tomorrow`..."""
    if not _BEGIN.match(value.strip()):
        raise specs.SpecError(f"begin time {value!r}: expected now+SECONDS, YYYY-MM-DDTHH:MM:SS")
    return value.strip()


def _command_words(command: str | Sequence[str]) -> list[str]:
    words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command]
    if not words:
        raise specs.SpecError("the command to run is empty")
    return words


@dataclass
class SlurmJob:
    """Options common to every template: they become `#SBATCH` lines."""

    job_name: str
    time: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    output: str | None = None
    begin: str | None = None
    chdir: str | None = None
    #: Extra `#SBATCH` option lines from the config (`--qos=high` or `#SBATCH --qos=high`).
    extra_sbatch: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        specs.validate_job_name(self.job_name)
        if self.time:
            self.time = specs.validate_time(self.time)
        for what in ("partition", "account", "qos"):
            value = getattr(self, what)
            if value:
                specs.validate_words(value, what)
        for what in ("output", "chdir"):
            value = getattr(self, what)
            if value:
                specs.check_text(value, what)
        if self.begin:
            self.begin = validate_begin(self.begin)
        self.extra_sbatch = [_extra_sbatch(line) for line in self.extra_sbatch]

    def sbatch_options(self) -> list[tuple[str, str | None]]:
        """(option, value) pairs of the `#SBATCH` lines; value None for a bare flag."""
        opts = ("time", "partition", "account", "qos", "begin", "chdir", "output")
        return [
            ("job-name", self.job_name),
            *((o, getattr(self, o)) for o in opts if getattr(self, o)),
        ]

    @property
    def self_command(self) -> str | None:
        """The absolute path by which this job runs rtool itself, when it does: the script
        checks it exists on the node before anything else (`_rtool_self_check.j2`)."""
        return None

    self_command_fix = INSTALL_RTOOL

    def sbatch_lines(self) -> list[Quoted]:
        """The text after `#SBATCH ` of each header line, values quoted for sbatch."""
        lines = []
        for opt, value in self.sbatch_options():
            if not _OPTION.match(opt):
                raise specs.SpecError(f"bad sbatch option name {opt!r}")
            tail = "" if value is None else "=" + sbatch_quote(value)
            lines.append(Quoted(f"--{opt}{tail}"))
        return [*lines, *(Quoted(line) for line in self.extra_sbatch)]


def _extra_sbatch(line: str) -> str:
    text = specs.check_text(line.strip(), "extra #SBATCH line")
    text = text.removeprefix("#SBATCH").strip()
    if not text.startswith("-"):
        raise specs.SpecError(
            f"extra #SBATCH line {line!r} must start with an option, e.g. --qos=x"
        )
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise specs.SpecError(f"extra #SBATCH line {line!r}: {exc}") from None
    if not _RAW_OPTION.match(words[0]) or len(words) > 2:
        raise specs.SpecError(
            f"extra #SBATCH line {line!r}: expected one option, e.g. --qos=high or -q high"
        )
    return text


@dataclass
class CronSchedulerJob(SlurmJob):
    """One tick of the cron scheduler chain (`cron_scheduler.slurm.j2`)."""

    command: str | Sequence[str] = ()
    template: str = "cron_scheduler.slurm.j2"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.command = _command_words(self.command)

    @property
    def self_command(self) -> str | None:
        first = str(self.command[0])
        return first if first.startswith("/") else None

    self_command_fix = f"{INSTALL_RTOOL} and run `rtool cron start` with that rtool"


@dataclass
class WatchdogJob(SlurmJob):
    """A Slurm job that runs a command (e.g. `rtool watch all`) every `interval` seconds until
    its time limit is near (`watchdog.slurm.j2`)."""

    command: str | Sequence[str] = ()
    interval: int = 300
    template: str = "watchdog.slurm.j2"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.command = _command_words(self.command)
        specs.validate_positive(self.interval, "interval")


def render_job(job: SlurmJob, template_dirs: Sequence[str] = (), **extra: Any) -> str:
    """Render a job with its template (user folders first: a template of the same name wins)."""
    name = str(getattr(job, "template", ""))
    return render(name, template_dirs, job=job, ShellCode=ShellCode, **extra)


def render_cron_scheduler(
    command: str | Sequence[str], job_name: str, template_dirs: Sequence[str] = (), **options: Any
) -> str:
    """The cron scheduler's batch script. `command` is a list of words or a simple command line
    (split with shlex and re-quoted: no shell operators). Options: time, partition, account,
    qos, output, begin, chdir, extra_sbatch."""
    return render_job(
        CronSchedulerJob(job_name=job_name, command=command, **options), template_dirs
    )
