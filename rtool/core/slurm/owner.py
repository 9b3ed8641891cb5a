"""Whose job is it? The pure half of the Slurm layer's user scoping (`cmd.Slurm` calls these):
before any action on a job id the layer asks `scontrol show job` whose job it is
(`UserId=alice(1001)`) and refuses anyone else's, also when rtool runs as root or an operator.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from rtool.core import validate as v
from rtool.core.slurm.failures import ForeignJob, SlurmError

#: scontrol verbs that act on jobs named by their ids (the owner is checked first).
JOB_VERBS = frozenset(
    {"hold", "uhold", "release", "requeue", "requeuehold", "suspend", "resume", "top"}
)
_UID = re.compile(r"\((\d+)\)\s*$", re.ASCII)


def user_arg(name: str) -> str:
    """A user for `--user=`: a login name, or a uid number (a user the passwd file lacks)."""
    return name if name.isascii() and name.isdigit() and len(name) <= 10 else v.user(name)


def record_uid(record: Mapping[str, str]) -> int | None:
    """The uid in a `scontrol show job` record's `UserId=alice(1001)`, or None."""
    m = _UID.search(record.get("UserId", ""))
    return int(m.group(1)) if m else None


def acted_on(args: Sequence[str]) -> list[str] | None:
    """The job ids an scontrol command acts on (`hold 12`, `update JobId=12 ...`, `write
    batch_script 12 -`), validated; None when it acts on no job (`show`, `ping`, `update
    NodeName=...`)."""
    if not args:
        return None
    verb = args[0].lower()
    if verb in JOB_VERBS:
        return v.job_ids(list(args[1:]))
    if verb == "write" and len(args) > 2 and args[1].lower() == "batch_script":
        return v.job_ids([args[2]])  # reading a job's script is acting on it too
    if verb == "update":
        keys = [a.split("=", 1) for a in args[1:] if "=" in a]
        ids = [value for key, value in keys if key.lower() in ("jobid", "job")]
        return v.job_ids(ids) if ids else None
    return None


def foreign(records: Iterable[Mapping[str, str]], job_id: str, me: str) -> str | None:
    """Why rtool may not act on the job whose `scontrol show job` records these are (one of
    them is not yours, or does not say whose it is); None when every one is yours."""
    for rec in records:
        if record_uid(rec) != os.getuid():
            owner = rec.get("UserId") or "an unknown user"
            return f"job {job_id} belongs to {owner}, not to you ({me}): not touched"
    return None


class ShowsJobs(Protocol):
    """What `check_owner` asks: rtool.core.slurm.cmd.Slurm."""

    user: str

    def show_job(self, job_id: str) -> list[dict[str, str]]: ...


def check_owner(slurm: ShowsJobs, job_ids: Iterable[str]) -> None:
    """Raise ForeignJob unless Slurm says each job (every task of an array) is yours; asked
    right before acting, never taken from squeue output or a file."""
    for job_id in job_ids:
        records = slurm.show_job(job_id)
        if not records:
            raise SlurmError(["scontrol", "show", "job", job_id], "no such job (nothing done)")
        check_records(records, job_id, slurm.user)


def check_records(records: Iterable[Mapping[str, str]], job_id: str, me: str) -> None:
    """Raise ForeignJob unless every `scontrol show job` record is a job of yours (`me`)."""
    why = foreign(records, job_id, me)
    if why:
        raise ForeignJob(["scontrol", "show", "job", job_id], why)
