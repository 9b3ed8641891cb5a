"""Slurm accounting (`sacct`): the record type, the argv builder and the pure parser.

`sacct -P -n -X -D --format=SACCT_FORMAT` prints one `|`-separated line per job allocation
(`-X`: no `.batch`/`.0` steps), and with `-D` one per attempt of a requeued job (a NODE_FAIL or
REQUEUED line, then the next attempt). The command itself runs in `Slurm.sacct` (cmd.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from rtool.core import validate as v
from rtool.core.slurm.parse import ParseError, expand_hostlist, parse_slurm_timestamp
from rtool.core.validate import ArgvError

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: sacct fields, in order; the job name is last so a `|` inside it cannot shift the others.
SACCT_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "State",
    "ExitCode",
    "NodeList",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "Partition",
    "JobName",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS)
#: The same with `FailedNode` (24.11 and newer: the node whose failure ended a NODE_FAIL
#: attempt) before the job name; 22.05's sacct refuses the field (`Invalid field requested`).
FAILED_NODE_FIELDS: tuple[str, ...] = (*SACCT_FIELDS[:-1], "FailedNode", SACCT_FIELDS[-1])
FAILED_NODE_FORMAT = ",".join(FAILED_NODE_FIELDS)
#: What sacct prints (stderr) when it does not know the FailedNode field.
NO_FAILED_NODE = 'invalid field requested: "failednode"'
#: What sacct prints (stderr) on a cluster without an accounting daemon.
DISABLED_MESSAGE = "accounting storage is disabled"

_STATE = re.compile(r"[A-Z_]{1,20}", re.ASCII)
_SHOWN_ID = re.compile(r"(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+\d+)?")


@dataclass(frozen=True)
class SacctRecord:
    """One attempt of one job (or array task) as accounting saw it."""

    job_id: str  # as printed: "15", "12_3", "12_[4-6%1]" (pending tasks)
    job_id_raw: str  # Slurm's own number for this job or task: "15", "14"
    array_job_id: str | None  # "12" for an array task, None for a plain job
    array_task_id: int | None  # 3 for "12_3"; None for plain jobs and pending task ranges
    name: str
    state: str  # base word: COMPLETED, FAILED, CANCELLED (not "CANCELLED by 0"), NODE_FAIL ...
    exit_code: int | None  # None when sacct printed nothing
    signal: int | None  # the signal that ended it ("0:9" -> 9); None when none did
    nodes: tuple[str, ...]  # expanded: ("n1", "n2"); () while pending
    submit: float | None  # epoch seconds; None when Unknown
    start: float | None
    end: float | None
    elapsed_s: float | None
    partition: str
    #: The node(s) Slurm recorded as the one whose failure ended a NODE_FAIL attempt
    #: (sacct's FailedNode, 24.11 and newer; () when not asked or not known).
    failed_node: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        """True once this attempt has ended (it has an end time and is not queued or running)."""
        return self.end is not None and self.state not in {"RUNNING", "PENDING", "REQUEUED"}


class SacctQuery(TypedDict, total=False):
    """Which attempts to ask for (`Slurm.sacct`, `sacct_argv`); every key may be left out."""

    job_ids: Iterable[str]  # `15`, `12_3` (an array's id: all its tasks)
    names: Iterable[str]
    since: float | None  # epoch time (else Slurm's default, midnight)
    all_attempts: bool  # one record per attempt (-D); default True
    states: Iterable[str]  # only attempts in those states since then (`NODE_FAIL`)
    failed_node: bool  # with FailedNode (24.11+)


def sacct_argv(**q: Unpack[SacctQuery]) -> list[str]:
    """The sacct command line (arguments validated; see `Slurm.sacct`). `states`: only the
    attempts that were in one of them between `since` and now (`--state`, with `--endtime=now`:
    without it sacct's window ends at the start time); `failed_node`: ask FailedNode too."""
    ids = [v.job_id(j) for j in q.get("job_ids", ())]
    name_list = [v.name(n, "job name") for n in q.get("names", ())]
    wanted = [validate_state(s) for s in q.get("states", ())]
    fmt = FAILED_NODE_FORMAT if q.get("failed_node") else SACCT_FORMAT
    argv = ["sacct", "-P", "-n", "-X", f"--format={fmt}"]
    if q.get("all_attempts", True):
        argv.append("-D")
    if ids:
        argv.append("--jobs=" + ",".join(ids))
    if name_list:
        argv.append("--name=" + ",".join(name_list))
    since = q.get("since")
    if since is not None:
        argv.append("--starttime=" + datetime.fromtimestamp(since).strftime("%Y-%m-%dT%H:%M:%S"))
    if wanted:
        argv += ["--state=" + ",".join(wanted), "--endtime=now"]
    return argv


def validate_state(state: str) -> str:
    """A job state sacct's `--state` takes (`NODE_FAIL`, `CD`)."""
    if not isinstance(state, str) or not _STATE.fullmatch(state):
        raise ArgvError(f"not a job state: {state!r}")
    return state


def _epoch(text: str) -> float | None:
    when = parse_slurm_timestamp(text)
    return when.timestamp() if when is not None else None


def _exit(text: str) -> tuple[int | None, int | None]:
    s = text.strip()
    if not s:
        return None, None
    code, _, sig = s.partition(":")
    if not code.isdigit() or (sig and not sig.isdigit()):
        raise ParseError(f"not an exit code: {text!r}")
    signal = int(sig) if sig else 0
    return int(code), (signal or None)


def parse_sacct_line(line: str, failed_node: bool = False) -> SacctRecord:
    fields = FAILED_NODE_FIELDS if failed_node else SACCT_FIELDS
    parts = line.split("|", len(fields) - 1)
    if len(parts) != len(fields):
        raise ParseError(f"sacct line has {len(parts)} fields, expected {len(fields)}")
    raw = dict(zip(fields, (p.strip() for p in parts[:-1]), strict=False))
    job_id = raw["JobID"]
    m = _SHOWN_ID.fullmatch(job_id)
    if not m:
        raise ParseError(f"not a job id in sacct output: {job_id!r}")
    array_job, task = (m.group(1), m.group(2)) if m.group(2) else (None, None)
    state = raw["State"].split(" ", 1)[0].rstrip("+")
    if not state:
        raise ParseError(f"no state in sacct line: {line!r}")
    exit_code, signal = _exit(raw["ExitCode"])
    elapsed = raw["ElapsedRaw"]
    return SacctRecord(
        job_id=job_id,
        job_id_raw=raw["JobIDRaw"] or job_id,
        array_job_id=array_job,
        array_task_id=int(task) if task and task.isdigit() else None,
        name=parts[-1].rstrip("\r\n"),
        state=state,
        exit_code=exit_code,
        signal=signal,
        nodes=tuple(expand_hostlist(raw["NodeList"])),
        submit=_epoch(raw["Submit"]),
        start=_epoch(raw["Start"]),
        end=_epoch(raw["End"]),
        elapsed_s=float(elapsed) if elapsed.isdigit() else None,
        partition=raw["Partition"],
        failed_node=tuple(expand_hostlist(raw.get("FailedNode", ""))),
    )


def parse_sacct(text: str, failed_node: bool = False) -> list[SacctRecord]:
    """Every record of `sacct -P -n --format=SACCT_FORMAT` output (FAILED_NODE_FORMAT with
    `failed_node`), in sacct's order."""
    return [parse_sacct_line(line, failed_node) for line in text.splitlines() if line.strip()]
