"""What to change when the signal does not reach the training (pure): the texts the drill's
`reached` and `exit` steps end with. Each names the change for the script the job really runs:
`B:` or not, a trap that passes the signal on, `exec`, or `rtool submit` (whose template traps
and forwards it).

And the drill's verdict after the stop (pure): did something continue the run (the job back in
the queue, the next array task or chained job), and did the next attempt resume at the saved
step + 1 (no step lost or done twice)? Each returns None when it cannot judge."""

from __future__ import annotations

import signal as _signal

from rtool.core.alert import Status
from rtool.drill.model import Mode, Observation, Plan, Step, StepResult
from rtool.drill.preempt import preempt_hint

#: What a batch script that passes the signal on looks like (docs/drill.md).
TRAP = "trap 'kill -{sig} $pid' {sig}; python train.py & pid=$!; wait $pid; wait $pid"


def signame(number: int) -> str:
    """`10` -> `SIGUSR1` (`signal 99` for a number this system does not name)."""
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def reach_hint(plan: Plan) -> str:
    """What to change when the signal never reached the training."""
    f, spec = plan.facts, plan.signal
    if plan.preempt is not None:
        return preempt_hint()
    if spec is not None and not spec.batch:
        if f.uses_srun and not f.rtool_template:
            return (
                f"--signal={spec.sbatch()} goes to the srun tasks: start the Guard in the "
                "training srun runs (rtool.shim), with the signal in RTOOL_SIGNALS"
            )
        return (
            f"--signal={spec.sbatch()} goes to the job steps only, never to a training the "
            f"batch shell runs itself: use --signal=B:{spec.name}@{spec.lead} with rtool "
            "submit's template (it forwards it to the training)"
        )
    if not f.rtool_template:
        return batch_hint(plan)
    if f.launcher:
        return (
            f"{f.launcher} stands between the batch shell and the training and eats it: start "
            f"the ranks with srun (one task per rank), or make {f.launcher} forward it"
        )
    return (
        "make the Guard (rtool.shim) in the training's main thread, with the signal in "
        "RTOOL_SIGNALS, before the first step"
    )


def batch_hint(plan: Plan) -> str:
    """A hand-written script whose batch shell gets a `B:` signal it does not pass on."""
    spec = plan.signal
    name = spec.name if spec is not None else "USR1"
    lead = spec.lead if spec is not None else 600
    trap = TRAP.format(sig=name)
    if plan.facts.uses_srun:
        return (
            f"the batch shell gets SIG{name} and does not pass it on (bash dies of an "
            f"untrapped {name}): drop B: so Slurm signals the srun tasks (--signal={name}@"
            f"{lead}), or trap it and pass it on ({trap.replace('python', 'srun python')}), "
            "or submit with rtool submit"
        )
    return (
        f"the batch shell gets SIG{name} and does not pass it on (bash dies of an untrapped "
        f"{name}): exec the training (exec python train.py: it becomes the batch shell and "
        f"gets the signal itself), or trap it and pass it on ({trap}), or submit with rtool "
        "submit"
    )


def wrapper_hint(plan: Plan, number: int) -> str:
    """The training's process (a wrapper script around the training) died of the signal."""
    name = signame(number).removeprefix("SIG")
    return (
        f"the process the batch script started is a wrapper that died of SIG{name} without "
        f"passing it on: exec the training from it (exec python train.py), or trap {name} "
        f"in it and pass it on ({TRAP.format(sig=name)}), or start the training itself with "
        "rtool submit"
    )


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
