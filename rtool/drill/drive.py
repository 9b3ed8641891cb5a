"""Run the drill (I/O): wait for a step, send the signal the way Slurm would, watch the stop,
the exit, the requeue and the next attempt, each wait bounded.

What happened is read from what the run itself records, not from timing assumptions: the
shim's heartbeat (its stop, the save's step, start and length, the exit code it chose), the
batch script's end record of the attempt (the training's exit code, the heartbeat as it
ended), and Slurm (the job's state, restarts and exit code, the queue).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.identity import is_mine
from rtool.core.proc import ProcError
from rtool.core.slurm import QUEUED_STATES, RUNNING_STATES, Slurm
from rtool.drill.jobstate import ENDED, POLL, job_record, over, read_hb, requeued, this_attempt
from rtool.drill.model import Mode, Observation, Plan, Target
from rtool.drill.preempt import end_grace
from rtool.runs.attempt_records import BatchRecord, read_records

log = logging.getLogger(__name__)
Say = Callable[[str], None]

#: While the attempt stops: the next attempt may replace its heartbeat within seconds.
STOP_POLL = 0.25
#: Waited beyond the lead (or the job's end) for the stop before saying it never came: the
#: lead again, at least MIN_SLACK, at most MAX_SLACK.
MIN_SLACK, MAX_SLACK = 15.0, 60.0
#: Waited for the batch script's end record once the job left RUNNING.
RECORD_WAIT = 15.0
#: Waited for Slurm to show the requeue or the next task.
REQUEUE_WAIT = 30.0
#: An end record this much later than the training's stop is noted.
LATE_RECORD = 10.0


def drive(slurm: Slurm, plan: Plan, say: Say) -> Observation:
    """The whole drill; what was seen (never raises for what Slurm or the files say)."""
    obs = Observation()
    if plan.signal is None or (plan.mode is Mode.NONE and not plan.throwaway):
        return obs  # nothing to send, or a stop nothing would continue: not sent
    if not wait_ready(slurm, plan, obs, say):
        return obs
    send(slurm, plan, obs, say)
    if obs.signal_error is not None:
        return obs
    wait_stop(slurm, plan, obs, say)
    if obs.still_running:
        return obs
    collect(slurm, plan, obs)
    next_attempt(slurm, plan, obs)
    if not plan.no_requeue and (obs.requeued or obs.next_job) and obs.stop is not None:
        wait_resume(slurm, plan, obs, say)
    return obs


def wait_ready(slurm: Slurm, plan: Plan, obs: Observation, say: Say) -> bool:
    """Until the drilled attempt's heartbeat shows a step (a save needs something to save)."""
    t = plan.target
    say(f"waiting for job {t.job_id} to take a step (heartbeat {plan.heartbeat})")
    deadline = time.time() + plan.start_timeout
    seen: Heartbeat | None = None
    while time.time() < deadline:
        hb = read_hb(plan.heartbeat)
        seen = hb or seen
        running = hb is not None and hb.state is RunState.RUNNING and hb.step is not None
        if running and this_attempt(hb, t):
            obs.ready = hb
            return True
        rec = job_record(slurm, t)
        if over(rec, t):
            state = (rec or {}).get("JobState", "gone")
            obs.not_ready = f"job {t.job_id} ended ({state}) before the training took a step"
            return False
        time.sleep(POLL)
    shows = f"job {seen.job_id} restart {seen.restart_count}, {seen.state}" if seen else "nothing"
    obs.not_ready = (
        f"job {t.job_id} took no step within {plan.start_timeout:.0f}s (heartbeat "
        f"{plan.heartbeat} shows {shows})"
    )
    return False


def send(slurm: Slurm, plan: Plan, obs: Observation, say: Say) -> None:
    spec, t = plan.signal, plan.target
    assert spec is not None
    now = time.time()
    left = t.end_time - now if t.end_time is not None else None
    obs.deadline_mode = (
        plan.facts.is_deadline(spec.name) and left is not None and left < plan.facts.deadline_window
    ) and plan.preempt is None
    where = "its batch shell" if spec.batch else "every task of its steps"
    if plan.preempt is not None:
        where += f" (a preemption on partition {plan.preempt.partition}: {spec.lead}s grace)"
    step = obs.ready.step if obs.ready is not None else "?"
    say(f"job {t.job_id} is at step {step}: sending SIG{spec.name} to {where}")
    obs.signalled_at = now
    try:
        slurm.scancel([t.job_id], signal=spec.name, batch=spec.batch)
    except ProcError as exc:
        if not _delivered(slurm, plan, now):
            obs.signal_error = str(exc)
            return
        obs.notes.append(f"scancel reported a failure ({exc}) but the signal arrived")


def _delivered(slurm: Slurm, plan: Plan, since: float) -> bool:
    """After scancel failed: did the signal arrive anyway? 22.05 answers `--batch --signal`
    with exit 229 (ESLURM_ALREADY_DONE) when the batch shell ended before its reply (seen on
    the local cluster, now and then): the job is ending, or the shim began to stop."""
    time.sleep(2 * POLL)
    hb = read_hb(plan.heartbeat)
    if this_attempt(hb, plan.target) and hb is not None and hb.state in (RunState.SAVING, *ENDED):
        return hb.time >= since - 1
    return over(job_record(slurm, plan.target), plan.target)


def wait_stop(slurm: Slurm, plan: Plan, obs: Observation, say: Say) -> None:
    """Until the attempt ends (or the lead plus some slack passed), noting the heartbeat."""
    t, lead = plan.target, float(plan.lead or 0)
    assert obs.signalled_at is not None
    slack = min(MAX_SLACK, max(MIN_SLACK, lead))
    if obs.deadline_mode and t.end_time is not None:
        deadline = t.end_time + slack
        say(f"the job ends in {t.end_time - obs.signalled_at:.0f}s: the shim trains on to then")
    elif plan.preempt is not None:
        deadline = obs.signalled_at + plan.preempt.grace  # then Slurm ends it and requeues it
    else:
        deadline = obs.signalled_at + lead + slack
    while True:
        _note(plan, obs, read_hb(plan.heartbeat))
        rec = job_record(slurm, t)
        if over(rec, t):
            obs.slurm_state = (rec or {}).get("JobState") or "gone"
            _last_look(plan, obs)
            return
        now = time.time()
        if now > deadline and not (obs.stop is not None and now < deadline + RECORD_WAIT):
            if plan.preempt is not None:
                end_grace(slurm, plan, obs, say)
                _last_look(plan, obs)
                return
            obs.still_running, obs.gave_up_at = True, now  # (a stopped one: its exit awaited)
            return
        time.sleep(STOP_POLL)


def _note(plan: Plan, obs: Observation, hb: Heartbeat | None) -> None:
    """One heartbeat read while the attempt stops: kept only when it is the drilled attempt's."""
    if not this_attempt(hb, plan.target) or hb is None or obs.signalled_at is None:
        return
    obs.last = hb
    if hb.state is RunState.SAVING and obs.saving_seen_at is None:
        obs.saving_seen_at = time.time()
    if hb.state in ENDED and (hb.stop_time or 0) >= obs.signalled_at - 1:
        obs.stop = hb


def _last_look(plan: Plan, obs: Observation) -> None:
    """Once the attempt ended: its final heartbeat, or, when a later attempt already replaced
    it, that attempt's record of the drilled one's stop (the shim carries the previous stop and
    save over until it stops itself). Never a later attempt's own state."""
    hb = read_hb(plan.heartbeat)
    _note(plan, obs, hb)
    if obs.stop is not None or hb is None or this_attempt(hb, plan.target):
        return
    carried = carried_stop(hb, plan.target, obs.signalled_at or 0.0)
    if carried is not None:
        obs.stop = carried
        obs.notes.append(
            "the next attempt had replaced the heartbeat: its stop read from the "
            "stop and save the next attempt carries over"
        )


def carried_stop(hb: Heartbeat, target: Target, since: float) -> Heartbeat | None:
    """The drilled attempt's stop as a later heartbeat carries it (stop_job_id is the target),
    with its save when that save came no later than the stop."""
    if hb.stop_job_id != target.raw_id or (hb.stop_time or 0.0) < since - 1:
        return None
    saved = hb.last_save_time is not None and hb.last_save_time <= (hb.stop_time or 0.0) + 1
    ended = RunState.CRASHED if hb.stop_reason == "crashed" else RunState.STOPPED
    return hb.replace(
        state=ended, job_id=target.raw_id, restart_count=target.restart, step=hb.stop_step,
        time=hb.stop_time, last_saved_step=hb.last_saved_step if saved else None,
        last_save_time=hb.last_save_time if saved else None,
        last_save_seconds=hb.last_save_seconds if saved else None,
    )  # fmt: skip


def _end_record(plan: Plan) -> BatchRecord | None:
    t = plan.target
    try:
        recs = read_records(plan.records).records if plan.records else []
    except OSError as exc:
        log.info("attempt records not read: %s", exc)
        return None
    ends = [r for r in recs if r.event == "end" and (r.job_id, r.restart) == (t.raw_id, t.restart)]
    return ends[-1] if ends else None


def _final(end: BatchRecord | None) -> bool:
    return end is not None and end.heartbeat is not None and end.heartbeat.state in ENDED


def collect(slurm: Slurm, plan: Plan, obs: Observation) -> None:
    """The exit code, the end and the final heartbeat of the drilled attempt."""
    deadline = time.time() + RECORD_WAIT
    end = _end_record(plan)
    # an end record without the training's stop may be followed by one with it (the batch
    # shell's SIGTERM came before the training's: rtool record's `last_word`)
    while not _final(end) and plan.records and time.time() < deadline:
        time.sleep(POLL)
        end = _end_record(plan) or end
    if end is not None:
        obs.exit_code = end.rc
        hb = end.heartbeat
        if this_attempt(hb, plan.target) and hb is not None and hb.state in ENDED:
            obs.stop = hb
        obs.ended_at = _ended(obs, end.time)
    _slurm_exit(slurm, plan, obs)
    if obs.exit_code is not None and obs.exit_code > 128:
        obs.exit_signal = obs.exit_code - 128


def _ended(obs: Observation, recorded: float) -> float:
    """When the stop was over: the shim's final heartbeat (written once the save returned, as
    the training exits: what the lead protects), else the batch script's end record (which a
    loaded machine can write minutes later: seen on the 2-core test machine, 125 s)."""
    done = obs.stop.stop_time if obs.stop is not None else None
    if done is None:
        return recorded
    if recorded - done > LATE_RECORD:
        obs.notes.append(
            f"the batch script recorded the attempt's end {recorded - done:.0f}s after the "
            "training stopped (what runs after the training, or a loaded machine)"
        )
    return done


def _slurm_exit(slurm: Slurm, plan: Plan, obs: Observation) -> None:
    """Slurm's ExitCode of the attempt (`85:0`; `0:10`: the batch shell died of signal 10),
    read once the job left COMPLETING (bounded); the exit code when no record said it."""
    deadline, rec = time.time() + RECORD_WAIT, job_record(slurm, plan.target) or {}
    while "COMPLETING" in rec.get("JobState", "") and time.time() < deadline:
        time.sleep(POLL)
        rec = job_record(slurm, plan.target) or {}
    if requeued(rec, plan.target):
        rec = {}  # the record is the next attempt's
    obs.slurm_state = rec.get("JobState", "").split(" ")[0] or obs.slurm_state
    code, _, sig = rec.get("ExitCode", "").partition(":")
    if code.isdigit() and sig.isdigit():
        obs.shell_signal = int(sig) or None
        if obs.exit_code is None:
            obs.exit_code = int(code)
    elif obs.exit_code is None and obs.stop is not None:
        obs.exit_code = obs.stop.exit_code


def next_attempt(slurm: Slurm, plan: Plan, obs: Observation) -> None:
    """What Slurm queued to continue the run."""
    t = plan.target
    deadline = time.time() + REQUEUE_WAIT
    while True:
        if plan.mode is Mode.AUTO_REQUEUE or obs.grace_ended:
            rec = job_record(slurm, t) or {}
            state = rec.get("JobState", "").split(" ")[0]
            obs.slurm_state = state or obs.slurm_state
            if requeued(rec, t) and state:
                obs.requeued = state in QUEUED_STATES or state in RUNNING_STATES
                obs.next_job, obs.next_reason = t.job_id, _reason(rec.get("Reason"))
                return
        elif plan.mode in (Mode.ARRAY, Mode.CHAIN):
            _queued_next(slurm, plan, obs)
            if obs.next_job is not None:
                return
        if plan.mode is Mode.NONE or time.time() > deadline:
            requeues = plan.mode is Mode.AUTO_REQUEUE or obs.grace_ended
            obs.requeued = False if requeues else obs.requeued
            return
        time.sleep(POLL)


def _reason(text: str | None) -> str | None:
    return None if text in (None, "", "None", "(null)") else text


def _queued_next(slurm: Slurm, plan: Plan, obs: Observation) -> None:
    t = plan.target
    try:
        jobs = slurm.squeue(names=[t.job_name], states="PENDING,RUNNING")
    except ProcError as exc:
        log.info("squeue: %s", exc)
        return
    others = [j for j in jobs if is_mine(j.user) and j.job_id != t.job_id]
    running = [j for j in others if j.state in RUNNING_STATES]
    pick = (running or others)[0] if (running or others) else None
    if pick is not None:
        obs.next_job = pick.job_id
        obs.next_reason = _reason(pick.reason) if pick.state == "PENDING" else None


def wait_resume(slurm: Slurm, plan: Plan, obs: Observation, say: Say) -> None:
    """Until the next attempt's heartbeat shows its first step (bounded)."""
    assert obs.signalled_at is not None
    say(f"waiting up to {plan.resume_timeout:.0f}s for the next attempt ({obs.next_job})")
    deadline = time.time() + plan.resume_timeout
    polls = 0
    while time.time() < deadline:
        hb = read_hb(plan.heartbeat)
        if hb is not None and not this_attempt(hb, plan.target):
            fresh = (hb.started or hb.time) >= obs.signalled_at - 5
            if fresh and hb.step_at_start is not None:
                obs.resumed = hb
                return
        polls += 1
        if polls % 10 == 0 and plan.mode is not Mode.AUTO_REQUEUE and not obs.grace_ended:
            _queued_next(slurm, plan, obs)
        time.sleep(POLL)
