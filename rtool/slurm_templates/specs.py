"""Validators of the Slurm specs that reach an sbatch script (pure functions, no Slurm call).

Each returns the normalised text (or a small dataclass) and raises `SpecError` with a one-line
message naming the problem. They run before anything is rendered or submitted.
"""

from __future__ import annotations

import re
import signal as _signal
from dataclasses import dataclass

from rtool.core.slurm.parse import ParseError, format_slurm_duration, parse_slurm_duration
from rtool.core.units import UnitError, parse_duration


class SpecError(ValueError):
    """A value that Slurm would reject or that is unsafe in a batch script."""


# Every pattern is ASCII only: `\d` would take full-width digits, which int() converts.
_A = re.ASCII
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ARRAY_ITEM = re.compile(r"^(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?)?$", _A)
_SIGNAL = re.compile(
    r"^(?P<flags>(?:[BR]{1,2}:){0,2})(?P<sig>[A-Za-z0-9]{1,10})(?:@(?P<secs>\d{1,9}))?$", _A
)
_WORD_LIST = re.compile(r"^[A-Za-z0-9_.\-]{1,128}(?:,[A-Za-z0-9_.\-]{1,128}){0,63}$", _A)
_HOSTLIST = re.compile(r"^[A-Za-z0-9_.\-]+(?:\[[0-9,\-]+\])?[A-Za-z0-9_.\-]*$", _A)
_JOB_ID = re.compile(r"^\d{1,12}(?:_\d{1,9})?$", _A)
_DIGITS = re.compile(r"\d{1,9}", _A)
#: Slurm's largest array index (MaxArraySize is at most 4000001) and a sane task count.
MAX_ARRAY_INDEX = 4_000_000
MAX_ARRAY_TASKS = 1_000_000
#: Signals the batch shell's trap can forward to the training (docs/submit.md).
CATCHABLE = ("USR1", "USR2", "TERM", "INT", "HUP", "QUIT", "ALRM", "URG", "WINCH")
#: Why the others cannot be the warning signal.
_NOT_FORWARDED = {
    "KILL": "it cannot be caught, so nothing can save first",
    "STOP": "it cannot be caught: it only suspends the job",
    "CONT": "Slurm sends it itself (on every resume and before TERM at every cancel), so the "
    "warning could not be told apart from them",
    "CHLD": "the batch shell gets it whenever a child ends",
    "PIPE": "a closed pipe sends it too",
    **dict.fromkeys(("TSTP", "TTIN", "TTOU"), "the batch shell uses it for job control"),
}
MAX_SIGNAL_LEAD = 65535  # Slurm stores the lead time in 16 bits
MAX_NAME = 200
MAX_TIME = 10 * 365 * 86400


def check_text(value: str, what: str) -> str:
    """A free-text value (job name, path): no newline or other control character."""
    if _CONTROL.search(value):
        raise SpecError(f"{what} {value!r} contains a newline or control character")
    return value


def validate_job_name(name: str) -> str:
    """Job names: 1-200 printable characters (quotes and spaces are fine, they are quoted)."""
    if not name or not name.strip():
        raise SpecError("job name is empty")
    if len(name) > MAX_NAME:
        raise SpecError(f"job name is longer than {MAX_NAME} characters")
    if name.strip().startswith("-") or "," in name:
        raise SpecError(
            f"job name {name!r} may not start with '-' or contain a comma "
            "(squeue/scancel --name would read it as an option or a list)"
        )
    return check_text(name, "job name")


#: The job name of a training run (rtool.runs.config.RunWatch's rule): every command finds a
#: run's attempts by it (squeue/sacct --name, the ledger's files).
_RUN_JOB_NAME = re.compile(r"[^-\s,][^\s,]{0,199}")


def validate_run_job_name(name: str) -> str:
    """The job name of a run `rtool submit` starts: no spaces or commas, not starting with '-'."""
    validate_job_name(name)
    if not _RUN_JOB_NAME.fullmatch(name):
        raise SpecError(
            f"job name {name!r}: rtool finds a run's attempts by their job name, which may not "
            "contain spaces or commas (use e.g. -, _ or . instead)"
        )
    return name


def validate_array(spec: str) -> str:
    """`1-10%1`, `0-99:2%4`, `1,3,5`, `1-3,7%2`: indices, ranges, steps and a `%` limit."""
    text = spec.strip()
    body, sep, limit = text.partition("%")
    if sep and (not _DIGITS.fullmatch(limit) or int(limit) < 1):
        raise SpecError(f"array spec {spec!r}: the limit after % must be a positive integer")
    if not body:
        raise SpecError(f"array spec {spec!r} is empty")
    for item in body.split(","):
        m = _ARRAY_ITEM.match(item)
        if not m:
            raise SpecError(
                f"array spec {spec!r}: bad item {item!r} (expected N, N-M or N-M:STEP, "
                "e.g. 1-10%1, 0-99:2%4, 1,3,5)"
            )
        first, last, step = m.group(1), m.group(2), m.group(3)
        if last is not None and int(last) < int(first):
            raise SpecError(f"array spec {spec!r}: range {item!r} ends before it starts")
        if step is not None and int(step) < 1:
            raise SpecError(f"array spec {spec!r}: step in {item!r} must be at least 1")
        if int(last or first) > MAX_ARRAY_INDEX:
            raise SpecError(f"array spec {spec!r}: index above Slurm's maximum {MAX_ARRAY_INDEX}")
    if _count(text) > MAX_ARRAY_TASKS:
        raise SpecError(f"array spec {spec!r}: more than {MAX_ARRAY_TASKS} tasks")
    return text


def array_task_count(spec: str) -> int:
    """Number of tasks in a valid array spec."""
    return _count(validate_array(spec))


def _count(text: str) -> int:
    total = 0
    for item in text.partition("%")[0].split(","):
        m = _ARRAY_ITEM.match(item)
        assert m is not None
        first, last, step = int(m.group(1)), m.group(2), m.group(3)
        total += 1 if last is None else (int(last) - first) // int(step or 1) + 1
    return total


@dataclass(frozen=True)
class SignalSpec:
    """A parsed `--signal` spec: `B:USR1@600` -> batch=True, name="USR1", lead=600."""

    name: str  # without the SIG prefix: USR1, TERM ...
    lead: int  # seconds before the time limit
    batch: bool = True  # B: the signal goes to the batch shell only
    reservation: bool = False  # R: relative to the reservation end

    @property
    def number(self) -> int:
        return int(_signal.Signals["SIG" + self.name])

    def sbatch(self) -> str:
        flags = ("B:" if self.batch else "") + ("R:" if self.reservation else "")
        return f"{flags}{self.name}@{self.lead}"


def validate_signal(spec: str) -> SignalSpec:
    """`[B:][R:]SIG[@SECONDS]`; SIG is a name (USR1, SIGUSR1) or a number; default lead 60 s."""
    m = _SIGNAL.match(spec.strip())
    if not m:
        raise SpecError(f"signal spec {spec!r}: expected [B:][R:]SIG@SECONDS, e.g. B:USR1@600")
    flags = m.group("flags").replace(":", "")
    if len(set(flags)) != len(flags):
        raise SpecError(f"signal spec {spec!r}: repeated flag")
    name = _signal_name(m.group("sig"), spec)
    lead = int(m.group("secs") or 60)
    if lead > MAX_SIGNAL_LEAD:
        raise SpecError(f"signal spec {spec!r}: lead time must be at most {MAX_SIGNAL_LEAD} s")
    return SignalSpec(name=name, lead=lead, batch="B" in flags, reservation="R" in flags)


def _signal_name(sig: str, spec: str) -> str:
    if _DIGITS.fullmatch(sig):
        try:
            name = _signal.Signals(int(sig)).name[3:]
        except ValueError:
            raise SpecError(f"signal spec {spec!r}: no signal number {sig}") from None
    else:
        name = sig.upper().removeprefix("SIG")
    if name not in CATCHABLE:
        why = _NOT_FORWARDED.get(name, "rtool does not forward it")
        raise SpecError(
            f"signal spec {spec!r}: rtool cannot forward SIG{name} to the training ({why}); "
            f"use USR1 (the default), USR2 or TERM (or one of {', '.join(CATCHABLE[3:])})"
        )
    return name


def validate_time(spec: str) -> str:
    """A time limit as Slurm writes it (`20:00:00`, `2-00:00:00`, `30`) or as `90m`, `20h`, `2d`.

    Returns Slurm's form (`D-HH:MM:SS` or `HH:MM:SS`, or `UNLIMITED`).
    """
    text = spec.strip()
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return "UNLIMITED"
    seconds: float | None = _slurm_seconds(text)
    if seconds is None:
        try:
            seconds = parse_duration(text)
        except UnitError:
            raise SpecError(
                f"time limit {spec!r}: expected HH:MM:SS, D-HH:MM:SS, minutes, or 90m / 20h / 2d"
            ) from None
        if seconds < 60:
            raise SpecError(f"time limit {spec!r} is shorter than Slurm's minimum of one minute")
        seconds = -(-seconds // 60) * 60  # Slurm counts whole minutes (MAX_TIME is whole too)
    if seconds > MAX_TIME:
        raise SpecError(f"time limit {spec!r} is absurdly long (more than 10 years)")
    return format_slurm_duration(seconds)


def _slurm_seconds(text: str) -> int | None:
    """Seconds in a Slurm time (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH[:MM[:SS]]`); None otherwise."""
    try:
        seconds = parse_slurm_duration(text)
    except ParseError:
        return None
    return None if seconds is None else int(seconds)


#: Slurm checks signal times periodically: a signal may come up to about a minute late.
SIGNAL_SLACK = 60


def default_signal_lead(limit: int | None, wanted: int) -> int:
    """The lead of the built-in default signal for a time limit of `limit` seconds: `wanted`
    (600 s) when the limit allows it, else a quarter of the limit but at least the minute Slurm
    may be late, and always shorter than the limit (half of it for a limit of a minute or less)."""
    if limit is None or wanted < limit // 2:
        return wanted
    lead = min(wanted, max(SIGNAL_SLACK, limit // 4))
    return lead if lead < limit else max(1, limit // 2)


def time_seconds(spec: str) -> int | None:
    """Seconds of a validated time limit, None for UNLIMITED."""
    norm = validate_time(spec)
    return None if norm == "UNLIMITED" else _slurm_seconds(norm)


def validate_words(value: str, what: str) -> str:
    """Partition, account, QOS: letters, digits, `_.-`, comma-separated."""
    if not _WORD_LIST.match(value):
        raise SpecError(f"{what} {value!r}: only letters, digits, '_', '.', '-' and commas")
    return value


def validate_nodelist(value: str) -> str:
    """A Slurm host list: `node01,gpu[01-04,07]`."""
    parts = _split_hostlist(value)
    if not parts or not all(_HOSTLIST.match(p) for p in parts):
        raise SpecError(f"node list {value!r}: expected names like node01,gpu[01-04,07]")
    return value


def _split_hostlist(value: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in value:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth not in (0, 1):
            return []
        cur += ch
    return [*parts, cur] if depth == 0 else []


def validate_job_id(value: str) -> str:
    """A job id (`1234`) or an array task (`1234_5`)."""
    if not _JOB_ID.match(value.strip()):
        raise SpecError(f"job id {value!r}: expected digits, e.g. 1234 or 1234_5")
    return value.strip()


def validate_positive(value: int, what: str, maximum: int = 10**9) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{what} must be a whole number (got {value!r})")
    if value < 1:
        raise SpecError(f"{what} must be at least 1 (got {value})")
    if value > maximum:
        raise SpecError(f"{what} must be at most {maximum} (got {value})")
    return value


def validate_count(value: int, what: str, maximum: int = 10**6) -> int:
    """A count where 0 means none (e.g. `--max-requeues 0`: never requeue)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{what} must be a whole number (got {value!r})")
    if not 0 <= value <= maximum:
        raise SpecError(f"{what} must be between 0 and {maximum} (got {value})")
    return value


def validate_hang_after(value: str, what: str = "hang-after") -> str:
    """A shim duration (RTOOL_HANG_AFTER, RTOOL_SAVE_EVERY): `auto`, `off` or above 0."""
    text = value.strip().lower()
    if text in ("auto", "off"):
        return text
    try:
        seconds = parse_duration(value)
    except UnitError:
        seconds = 0.0
    if seconds <= 0:
        raise SpecError(f"{what} {value!r}: auto, off or a duration like 30m")
    return value.strip()
