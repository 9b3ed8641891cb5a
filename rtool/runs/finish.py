"""When is a run finished? The training's word (its done marker `<heartbeat>.done`, or a heartbeat
in state `finished`) AND Slurm's word for that same attempt (it ended COMPLETED, exit code 0):
never the marker alone, which may be empty or planted. The run ledger applies the same rule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError, RunState, read_heartbeat
from rtool.core.slurm import AccountingDisabled, Slurm, SlurmError
from rtool.core.slurm.parse import ParseError
from rtool.runs.attempt_records import heartbeat_key

DONE_SUFFIX = ".done"


@dataclass(frozen=True)
class Claim:
    """The training says it finished, in the attempt `key` ((shown job id, restart), or None
    when neither the marker nor the heartbeat names one)."""

    key: tuple[str, int] | None
    marker: bool  # the done marker exists (else: the heartbeat says finished)


def _read(path: str) -> tuple[bool, Heartbeat | None]:
    """(exists, its heartbeat or None when empty, bad or not a regular file)."""
    if not os.path.lexists(path):
        return False, None
    try:
        return True, read_heartbeat(path)
    except (HeartbeatFormatError, RecursionError):
        return True, None


def claim(heartbeat: str | None) -> Claim | None:
    """The training's own claim to have finished (None when it makes none)."""
    if not heartbeat:
        return None
    path = os.path.expanduser(heartbeat)
    marker, done = _read(path + DONE_SUFFIX)
    _, hb = _read(path)
    if marker:
        return Claim(heartbeat_key(done) or heartbeat_key(hb), True)
    if hb is not None and hb.state is RunState.FINISHED:
        return Claim(heartbeat_key(hb), False)
    return None


def confirmed(slurm: Slurm, c: Claim | None) -> bool:
    """Slurm's word: the claimed attempt ended COMPLETED with exit code 0 (False when Slurm
    cannot tell, or says otherwise). sacct first; `scontrol show job` when there is no
    accounting, or when slurmdbd has no record of the attempt yet (it lags behind slurmctld)."""
    if c is None or c.key is None:
        return False
    job, restart = c.key
    try:
        recs = [r for r in slurm.sacct(job_ids=[job], all_attempts=True) if r.job_id == job]
        recs.sort(key=lambda r: r.start or 0.0)
        if recs:
            r = recs[restart] if restart < len(recs) else recs[-1]
            return r.state == "COMPLETED" and r.exit_code == 0
    except AccountingDisabled:
        pass
    except (SlurmError, ParseError, ValueError):
        return False
    try:
        shown = slurm.show_job(job)
    except (SlurmError, ParseError, ValueError):
        return False
    if not shown:
        return False
    state = shown[0].get("JobState", "").split()[:1]
    return state == ["COMPLETED"] and shown[0].get("ExitCode") == "0:0"
