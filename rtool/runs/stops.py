"""Whose stop a heartbeat reports (docs/runs.md, "stop" column).

The shim carries the previous job's stop fields (`stop_reason`, `stop_job_id`, ...) over until
this job stops, so a heartbeat of an attempt that finished, or is still running, may name the
stop of the attempt before it.
"""

from __future__ import annotations

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.runs.model import Attempt, Source


def own_stop(hb: Heartbeat) -> bool:
    """Whether the heartbeat's stop fields are its own launch's: `stop_job_id` is this job and
    the stop came after this launch started (a heartbeat without `stop_job_id`, from an older
    shim: only its own STOPPED state)."""
    if hb.stop_job_id is None:
        return hb.state is RunState.STOPPED
    if hb.stop_job_id != hb.job_id:
        return False
    return hb.started is None or hb.stop_time is None or hb.stop_time >= hb.started


def degraded_state(a: Attempt) -> Attempt:
    """Without accounting an attempt's state comes from its exit code (0: COMPLETED); one the
    shim stopped for the time limit (its own stop) ended on the time limit: TIMEOUT."""
    limited = a.stop_reason == "time_limit" and not a.finished
    if a.source is Source.RECORDS and a.state == "COMPLETED" and limited:
        return a.with_(state="TIMEOUT")
    return a
