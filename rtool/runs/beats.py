"""The heartbeats of a sweep on a run's attempts (pure): steps, saves, the stop and the fields
the shim reports (FROM_HEARTBEAT), from the end records' copies, the current heartbeat and the
launches restarted in place; the training's claim to have finished."""

from __future__ import annotations

from collections.abc import Sequence

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.runs.attempt_records import BatchRecord, heartbeat_key
from rtool.runs.finish import Claim
from rtool.runs.inplace import RestartRecord
from rtool.runs.model import FROM_HEARTBEAT, Attempt, Source

Attempts = dict[tuple[str, int], Attempt]


def own_stop(hb: Heartbeat) -> bool:
    """Whether the heartbeat's stop fields are its own launch's (docs/runs.md, "stop" column):
    the shim carries the previous job's stop fields over until this job stops, so a heartbeat of
    an attempt that finished, or is still running, may name the stop of the attempt before it.
    Its own: `stop_job_id` is this job and the stop came after this launch started (a heartbeat
    without `stop_job_id`, from an older shim: only its own STOPPED state)."""
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


def lowest(*values: int | None) -> int | None:
    return min((v for v in values if v is not None), default=None)


def highest(*values: int | None) -> int | None:
    return max((v for v in values if v is not None), default=None)


def apply_heartbeat(a: Attempt, hb: Heartbeat, final: bool = True) -> Attempt:
    """Steps, saves and the stop from a heartbeat of the attempt (`final`: of its last launch,
    whose stop ended the attempt; else of a launch restarted in place: its steps only)."""
    if not final:
        start, end = lowest(a.step_start, hb.step_at_start), highest(a.step_end, hb.step)
        return a.with_(step_start=start, step_end=end)
    changes: dict[str, object] = {}
    if hb.step_at_start is not None:  # the attempt's first launch started lowest
        changes["step_start"] = lowest(a.step_start, hb.step_at_start)
    if hb.step is not None:
        changes["step_end"] = max(hb.step, a.step_end if a.step_end is not None else hb.step)
    if hb.last_saved_step is not None:
        changes["last_saved_step"] = hb.last_saved_step
    ended = hb.state in (RunState.STOPPED, RunState.FINISHED, RunState.CRASHED)
    if ended and hb.stop_reason and own_stop(hb):
        changes["stop_reason"] = hb.stop_reason
    if hb.error is not None and hb.state is RunState.CRASHED:
        changes["error"] = str(hb.error)
        changes.setdefault("stop_reason", "crashed")
    if hb.state is RunState.FINISHED:
        changes["finished"] = True
    changes.update({k: v for k in FROM_HEARTBEAT if (v := getattr(hb, k))})
    if not a.nodes and hb.host:
        changes["nodes"] = (hb.host,)
    return a.with_(**changes)


def apply_beats(
    attempts: Attempts,
    records: Sequence[BatchRecord],
    hb: Heartbeat | None,
    claim: Claim | None,
    restarts: Sequence[RestartRecord],
) -> None:
    """The heartbeats of the sweep on their attempts: the end records' copies, the current one
    (`hb`), the training's claim to have finished, and the launches restarted in place."""
    for r in records:
        if r.heartbeat is not None and (r.shown_id, r.restart) in attempts:
            ended = (r.shown_id, r.restart)
            attempts[ended] = apply_heartbeat(attempts[ended], r.heartbeat)
    key = heartbeat_key(hb)
    if hb is not None and key is not None and key in attempts:
        attempts[key] = apply_heartbeat(attempts[key], hb)
    if claim is not None and claim.key in attempts:
        attempts[claim.key] = attempts[claim.key].with_(finished=True)
    for rec in restarts:  # the launches before an in-place restart (the first one's start)
        rkey = (rec.shown_id, rec.restart)
        if rec.heartbeat is not None and rkey in attempts:
            attempts[rkey] = apply_heartbeat(attempts[rkey], rec.heartbeat, final=False)
