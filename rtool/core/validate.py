"""Validators of every value that reaches a command's argv (stdlib only).

Anything read from a file or typed by a user passes one of these before it becomes an argument
of a Slurm command. The Slurm layer (`rtool.core.slurm.cmd`) calls them itself, so no caller
can bypass them: a heartbeat whose job id is `--state=RUNNING` is refused instead of becoming
`scancel --state=RUNNING` (every running job of the user). Each returns the value (stripped) or
raises `ArgvError`. ASCII only (`re.ASCII`): full-width digits are not digits here.
"""

from __future__ import annotations

import re

from rtool.core.errors import RtoolError

_A = re.ASCII
#: A job id, an array task (`1234_5`, `1234_[1-3]`) or a het component (`12+1`).
_JOB_ID = re.compile(r"[1-9][0-9]{0,11}(?:_(?:[0-9]{1,9}|\[[0-9,\-%:]{1,200}\])|\+[0-9]{1,4})?", _A)
_TASK = re.compile(r"[0-9]{1,9}", _A)
_NAME_BAD = re.compile(r"[\x00-\x1f\x7f,]", _A)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]", _A)
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}\$?", _A)
_NODE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}", _A)
_SIGNAL = re.compile(r"(?:SIG)?([A-Z][A-Z0-9]{1,7}|[0-9]{1,2})", _A)
_STATES = re.compile(r"[A-Za-z_]{1,20}(?:,[A-Za-z_]{1,20}){0,30}", _A)
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}", _A)
MAX_NAME = 200
#: Signal names Slurm's scancel/sbatch accept by name (no SIG prefix).
SIGNALS = frozenset(
    [
        "HUP",
        "INT",
        "QUIT",
        "ABRT",
        "KILL",
        "ALRM",
        "TERM",
        "USR1",
        "USR2",
        "CONT",
        "STOP",
        "TSTP",
        "TTIN",
        "TTOU",
        "URG",
        "WINCH",
        "XCPU",
    ]
)


class ArgvError(RtoolError, ValueError):
    """A value that may not reach a command's argv. Exit code 2 (bad input); a ValueError too,
    so callers that catch ValueError from a validator keep working."""

    exit_code = 2


def _text(value: object, what: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ArgvError(f"{what} {value!r}: expected text, got {type(value).__name__}")
    return str(value).strip()


def job_id(value: object, what: str = "job id") -> str:
    return _matching(_JOB_ID, value, what, "expected digits, e.g. 1234 or 1234_5")


def job_ids(values: object, what: str = "job id") -> list[str]:
    if isinstance(values, (str, int)):
        return [job_id(values, what)]
    return [job_id(v, what) for v in values]  # type: ignore[attr-defined]


def array_task_id(value: object, what: str = "array task id") -> str:
    return _matching(_TASK, value, what, "expected a task index such as 3")


def name(value: object, what: str = "name") -> str:
    """A job name or other free word: 1-200 characters, no control characters or commas,
    not starting with '-' (it would be read as an option)."""
    text = _text(value, what)
    if not text:
        raise ArgvError(f"{what} is empty")
    if text.startswith("-"):
        raise ArgvError(f"{what} {text!r} starts with '-' (it would be read as an option)")
    if len(text) > MAX_NAME:
        raise ArgvError(f"{what} is longer than {MAX_NAME} characters")
    if _NAME_BAD.search(text):
        raise ArgvError(f"{what} {text!r} contains a control character or a comma")
    return text


def _matching(pattern: re.Pattern[str], value: object, what: str, expected: str) -> str:
    """`value` as text when `pattern` matches all of it; else ArgvError saying `expected`."""
    text = _text(value, what)
    if pattern.fullmatch(text):
        return text
    raise ArgvError(f"{what} {text!r}: {expected}")


def user(value: object, what: str = "user name") -> str:
    return _matching(_USER, value, what, "expected a login name (letters, digits, _ . -)")


def node(value: object, what: str = "node name") -> str:
    return _matching(_NODE, value, what, "expected a host name such as node01")


def signal_name(value: object, what: str = "signal") -> str:
    """`USR1`, `SIGUSR1`, `10` -> the name Slurm takes (`USR1`) or the number."""
    text = _text(value, what).upper()
    m = _SIGNAL.fullmatch(text)
    if m and ((m.group(1).isdigit() and 0 < int(m.group(1)) < 65) or m.group(1) in SIGNALS):
        return m.group(1)
    raise ArgvError(f"{what} {text!r}: expected a signal name such as USR1 or TERM")


def states(value: object, what: str = "job states") -> str:
    return _matching(_STATES, value, what, "expected state names such as RUNNING,PENDING")


def word(value: object, what: str = "value") -> str:
    """A partition, account, QOS or other identifier."""
    return _matching(_WORD, value, what, "only letters, digits, '_', '.', '-'")


def words(value: object, what: str = "value") -> str:
    """A comma-separated list of `word`s."""
    text = _text(value, what)
    for part in text.split(","):
        word(part, what)
    return text


def path_arg(value: object, what: str = "path") -> str:
    """A path given as a positional argument: no control characters, not an option."""
    text = _text(value, what)
    if not text or text.startswith("-") or _CONTROL.search(text):
        raise ArgvError(f"{what} {text!r}: not a usable path (empty, an option, or control chars)")
    return text


def plain(value: object, what: str = "argument") -> str:
    """Any other argument: text without control characters."""
    text = _text(value, what)
    if _CONTROL.search(text):
        raise ArgvError(f"{what} {text!r} contains a newline or control character")
    return text
