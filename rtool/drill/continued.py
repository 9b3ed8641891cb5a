"""The drill's verdict after the stop (pure): did something continue the run (the job back in
the queue, the next array task or chained job), and did the next attempt resume at the saved
step + 1 (no step lost or done twice)? Each returns None when it cannot judge."""

from __future__ import annotations

from rtool.core.alert import Status
from rtool.drill.model import Mode, Observation, Plan, Step, StepResult


def requeue_step(plan: Plan, obs: Observation) -> StepResult | None:
    if plan.mode is Mode.NONE:
        text = "nothing continues the run after a stop: no array task left, no auto-requeue "
        text += "(or its --max-requeues are used up), no other queued job of the run"
        fix = "submit with --array 0-N%1 (or --auto-requeue for a single job)"
        return StepResult(Step.REQUEUE, Status.CRITICAL, text, fix)
    if not obs.sent or obs.still_running:
        return None
    if obs.grace_ended:
        text = f"Slurm requeued job {plan.target.job_id} at the grace's end (PreemptMode=REQUEUE)"
        if obs.requeued:
            return StepResult(Step.REQUEUE, Status.OK, f"{text}: restart {plan.target.restart + 1}")
        text = f"job {plan.target.job_id} was not requeued at the grace's end ({obs.slurm_state})"
        fix = "the job must be requeueable: submit with --requeue (or an array)"
        return StepResult(Step.REQUEUE, Status.CRITICAL, text, fix)
    if plan.mode is Mode.AUTO_REQUEUE:
        if obs.exit_code != plan.expected_code:
            return None
        if obs.requeued:
            text = (
                f"job {plan.target.job_id} is back in the queue (restart {plan.target.restart + 1})"
            )
            return StepResult(Step.REQUEUE, Status.OK, text)
        text = f"exit {obs.exit_code} but job {plan.target.job_id} was not requeued "
        text += f"(state {obs.slurm_state or 'gone'})"
        fix = "the batch script must run scontrol requeue on that code (rtool submit "
        fix += "--auto-requeue does) and the job must be requeueable (--requeue)"
        return StepResult(Step.REQUEUE, Status.CRITICAL, text, fix)
    if obs.next_job is None:
        text = f"no next attempt is queued ({plan.mode.value} expected)"
        return StepResult(Step.REQUEUE, Status.CRITICAL, text)
    why = f", pending: {obs.next_reason}" if obs.next_reason else ""
    text = f"the next attempt is job {obs.next_job} ({plan.mode.value}{why})"
    return StepResult(Step.REQUEUE, Status.OK, text)


def resume_step(plan: Plan, obs: Observation) -> StepResult | None:
    if not obs.sent or obs.stop is None or obs.stop.last_saved_step is None:
        return None
    want = obs.stop.last_saved_step + 1
    if plan.no_requeue:
        text = f"would start at step {want} (the saved step + 1): not waited for (--no-requeue)"
        return StepResult(Step.RESUME, Status.OK, text)
    hb = obs.resumed
    if hb is None:
        who = f"job {obs.next_job}" if obs.next_job else "the next attempt"
        why = f" (pending: {obs.next_reason})" if obs.next_reason else ""
        text = f"{who} took no step within {plan.resume_timeout:.0f}s{why}: resume not verified"
        fix = "look again later: rtool history " + plan.target.run
        return StepResult(Step.RESUME, Status.WARNING, text, fix)
    got = hb.step_at_start
    shown = f"{hb.array_job_id}_{hb.array_task_id}" if hb.array_task_id else hb.job_id
    who = f"job {shown}" + (f" (restart {hb.restart_count})" if hb.restart_count else "")
    if got == want:
        text = f"{who} started at step {got}: the saved step + 1, no step lost or done twice"
        return StepResult(Step.RESUME, Status.OK, text)
    if got is not None and got < want:
        text = f"{who} started at step {got}, not {want}: {want - got} step(s) done twice"
        fix = "load the newest checkpoint and start at its step + 1"
        return StepResult(Step.RESUME, Status.CRITICAL, text, fix)
    text = f"{who} started at step {got}, not {want}: steps skipped"
    return StepResult(Step.RESUME, Status.CRITICAL, text, "start at the saved step + 1")
