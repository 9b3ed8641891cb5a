"""What the drill reads of the drilled attempt while it waits (I/O, never raises for what
Slurm or the files say): its heartbeat, and Slurm's record of its job."""

from __future__ import annotations

import logging

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError, RunState, read_heartbeat
from rtool.core.proc import ProcError
from rtool.core.slurm import RUNNING_STATES, Slurm
from rtool.drill.model import Target

log = logging.getLogger(__name__)

#: Seconds between two looks.
POLL = 1.0
#: The heartbeat states of an attempt that stopped.
ENDED = (RunState.STOPPED, RunState.CRASHED, RunState.FINISHED)


def this_attempt(hb: Heartbeat | None, target: Target) -> bool:
    return hb is not None and hb.job_id == target.raw_id and hb.restart_count == target.restart


def read_hb(path: str | None) -> Heartbeat | None:
    if not path:
        return None
    try:
        return read_heartbeat(path)
    except HeartbeatFormatError as exc:
        log.info("heartbeat not read: %s", exc)
        return None


def job_record(slurm: Slurm, target: Target) -> dict[str, str] | None:
    """The target job's `scontrol show job` record (None when Slurm forgot it or fails)."""
    try:
        records = slurm.show_job(target.raw_id)
    except ProcError as exc:
        log.info("scontrol show job %s: %s", target.raw_id, exc)
        return {}  # unknown: not "gone"
    return records[0] if records else None


def over(rec: dict[str, str] | None, target: Target) -> bool:
    """The drilled attempt has ended (left RUNNING, or the job runs again after a requeue)."""
    if rec is None:
        return True
    if not rec:
        return False
    state = rec.get("JobState", "").split(" ")[0]
    return requeued(rec, target) or (bool(state) and state not in RUNNING_STATES)


def requeued(rec: dict[str, str], target: Target) -> bool:
    """Slurm's record is of a later attempt: the job was requeued since the drilled one."""
    restarts = rec.get("Restarts", "0")
    return restarts.isdigit() and int(restarts) > target.restart
