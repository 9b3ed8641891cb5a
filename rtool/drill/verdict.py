"""The drill's verdict (pure): what was seen, step by step, against the documented stop
contract (docs/shim.md): signal -> train on to the last safe step -> save -> exit with the stop
code -> requeue -> the next attempt resumes at the saved step + 1. A step that broke says what
to change. Each step's judge returns None when it cannot judge (an earlier step broke).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rtool.core.alert import Status
from rtool.core.heartbeat import Heartbeat
from rtool.drill.fixes import reach_hint, requeue_step, resume_step, signame, wrapper_hint
from rtool.drill.model import Mode, Observation, Plan, Report, Step, StepResult
from rtool.drill.preempt import grace_step, grace_text, preempt_hint, signal_text

#: The shim keeps twice the measured step + save before the end (docs/shim.md): a stop that
#: takes more than half the lead has less headroom than the shim itself asks for.
SAFETY = 2.0
#: Exit codes of the shim for a failed save and a save that did not return in time.
SAVE_FAILED, SAVE_TIMEOUT = 87, 88

Judge = Callable[[Plan, Observation], StepResult | None]


def _s(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 100 else f"{seconds:.0f}s"


def _sig(plan: Plan) -> str:
    return f"SIG{plan.signal.name}" if plan.signal is not None else "the signal"


def signal_step(plan: Plan, obs: Observation) -> StepResult:
    spec = plan.signal
    if spec is None:
        why = f" ({plan.facts.signal_error})" if plan.facts.signal_error else ""
        text = (
            f"job {plan.target.job_id} asks for no --signal{why}: before the time limit Slurm "
            "sends nothing, then TERM and KILL KillWait later, so nothing is saved in time"
        )
        fix = "submit with --signal B:USR1@600 (rtool submit's default), or name the one "
        fix += "sbatch got on its command line: rtool drill --signal B:USR1@600"
        return StepResult(Step.SIGNAL, Status.CRITICAL, text, fix)
    how = "the batch shell" if spec.batch else "the job steps"
    flag = "--batch " if spec.batch else ""
    if obs.not_ready:
        return StepResult(Step.SIGNAL, Status.UNKNOWN, f"not sent: {obs.not_ready}")
    if obs.signal_error:
        return StepResult(Step.SIGNAL, Status.UNKNOWN, f"scancel failed: {obs.signal_error}")
    if obs.signalled_at is None and plan.mode is Mode.NONE:
        return StepResult(Step.SIGNAL, None, "not sent: nothing would continue the run")
    if obs.signalled_at is None:
        return StepResult(Step.SIGNAL, Status.UNKNOWN, "not sent")
    if plan.preempt is not None:
        return StepResult(Step.SIGNAL, Status.OK, signal_text(plan))
    src = "--signal given to the drill" if plan.signal_given else "the batch script's --signal"
    text = (
        f"{_sig(plan)} sent to {how} of job {plan.target.job_id}, as Slurm does for "
        f"{spec.sbatch()} ({src}): scancel {flag}--signal={spec.name}"
    )
    return StepResult(Step.SIGNAL, Status.OK, text)


def _save_began(hb: Heartbeat) -> float | None:
    if hb.last_save_time is None:
        return None
    return hb.last_save_time - (hb.last_save_seconds or 0.0)


def reached_step(plan: Plan, obs: Observation) -> StepResult | None:
    if not obs.sent or obs.signalled_at is None:
        return None
    sig = _sig(plan)
    hb = obs.stop
    if hb is not None:
        began = _save_began(hb) if hb.last_saved_step == hb.stop_step else hb.stop_time
        after = f" {_s(max(0.0, began - obs.signalled_at))} after the signal" if began else ""
        text = f"the training stopped at step {hb.stop_step} ({hb.stop_reason}"
        text += f": {hb.stop_detail}){after}" if hb.stop_detail else f"){after}"
        if hb.stop_reason not in ("signal", "time_limit"):
            return StepResult(Step.REACHED, Status.WARNING, text + ", not on the signal")
        other = _other_signal(plan, hb, obs.shell_signal)
        if other is not None:
            died = (
                obs.exit_signal if obs.exit_signal == (plan.signal and plan.signal.number) else None
            )
            fix = wrapper_hint(plan, died) if died else reach_hint(plan)
            return StepResult(Step.REACHED, Status.CRITICAL, text + other, fix)
        return StepResult(Step.REACHED, Status.OK, text)
    if obs.saving_seen_at is None and obs.grace_ended:
        text = f"the training did not stop on {sig} within {grace_text(plan)}: Slurm then "
        text += "TERMs every process, KILLs it KillWait later and requeues it: nothing saved"
        return StepResult(Step.REACHED, Status.CRITICAL, text, preempt_hint())
    if obs.saving_seen_at is not None:
        after = _s(obs.saving_seen_at - obs.signalled_at)
        return StepResult(Step.REACHED, Status.OK, f"the save began {after} after the signal")
    last = obs.last
    if obs.still_running and last is not None and obs.ready is not None:
        moved = (last.step or 0) > (obs.ready.step or 0) and last.time > obs.signalled_at
        if moved:
            text = f"{sig} never reached the training: it still trains (step {last.step})"
            return StepResult(Step.REACHED, Status.CRITICAL, text, reach_hint(plan))
        text = f"after {sig} the training took no step and never stopped (stuck at {last.step})"
        return StepResult(Step.REACHED, Status.CRITICAL, text, reach_hint(plan))
    if plan.signal is not None and obs.exit_signal == plan.signal.number:
        text = f"the training's process died of {sig} (exit code {obs.exit_code} = 128+"
        text += f"{obs.exit_signal}): nothing handled it, nothing was saved"
        return StepResult(Step.REACHED, Status.CRITICAL, text, wrapper_hint(plan, obs.exit_signal))
    if plan.signal is not None and obs.shell_signal == plan.signal.number:
        text = f"the batch shell died of {sig} (Slurm: {obs.slurm_state or 'FAILED'} 0:"
        text += f"{obs.shell_signal}): nothing handled it, nothing was saved"
        return StepResult(Step.REACHED, Status.CRITICAL, text, reach_hint(plan))
    code = f"exit {obs.exit_code}" if obs.exit_code is not None else "no exit code"
    text = f"the job ended ({obs.slurm_state or 'gone'}, {code}) without the training stopping"
    return StepResult(Step.REACHED, Status.CRITICAL, text, reach_hint(plan))


def _other_signal(plan: Plan, hb: Heartbeat, shell: int | None) -> str | None:
    """Why a stop on a signal is not the drill's: the training stopped on another signal (the
    TERM Slurm sends when the batch shell died of the one the drill sent)."""
    spec = plan.signal
    got = (hb.stop_detail or "").split(" ")[0].upper().removeprefix("SIG")
    if spec is None or hb.stop_reason != "signal" or not got or got == spec.name:
        return None
    why = "that followed"
    if shell == spec.number:
        why = f"Slurm sent the job's tasks when the batch shell died of SIG{spec.name}"
    return (
        f", not on the SIG{spec.name} the drill sent but on the SIG{got} {why} (at the time "
        f"limit that TERM comes only KillWait before the KILL, not {spec.lead}s before)"
    )


def save_step(plan: Plan, obs: Observation) -> StepResult | None:
    hb = obs.stop
    if hb is None or obs.signalled_at is None or not obs.sent:
        return None
    if hb.exit_code == SAVE_FAILED:
        text = "the save on the way out raised (exit 87): nothing new was saved"
        return StepResult(Step.SAVE, Status.CRITICAL, text, "see the job's log and fix the save")
    if hb.exit_code == SAVE_TIMEOUT:
        text = "the save did not return within save_timeout (exit 88)"
        fix = "find what blocks the save (the log has every thread's stack), or raise "
        return StepResult(Step.SAVE, Status.CRITICAL, text, fix + "RTOOL_SAVE_TIMEOUT")
    began = _save_began(hb)
    if hb.last_saved_step != hb.stop_step or began is None or began < obs.signalled_at - 1:
        text = f"nothing was saved at the stop (step {hb.stop_step}; last save: step "
        text += f"{hb.last_saved_step})"
        fix = "give Guard a save function, or call guard.mark_saved(step, seconds) after "
        return StepResult(Step.SAVE, Status.CRITICAL, text, fix + "your framework saved")
    took = hb.last_save_seconds
    length = f" in {_s(took)}" if took is not None else ""
    text = f"saved step {hb.last_saved_step}{length} (began {_s(began - obs.signalled_at)} "
    return StepResult(Step.SAVE, Status.OK, text + "after the signal)")


def _exited(obs: Observation) -> float | None:
    if obs.ended_at is not None:
        return obs.ended_at
    return obs.stop.stop_time if obs.stop is not None else None


def lead_step(plan: Plan, obs: Observation) -> StepResult | None:
    end, lead = _exited(obs), plan.lead
    if plan.preempt is not None:
        return grace_step(plan, obs, end) if obs.sent else None
    if obs.still_running and obs.stop is None and lead is not None and obs.signalled_at:
        return _not_exited(plan, obs, lead, obs.signalled_at) if obs.sent else None
    if end is None or obs.signalled_at is None or lead is None or not obs.sent:
        return None
    took = max(0.0, end - obs.signalled_at)
    job_end = plan.target.end_time
    if obs.deadline_mode and job_end is not None:
        spare = job_end - end
        if spare < 0:
            text = f"the stop came {_s(-spare)} after the job's end: Slurm killed it first"
            return StepResult(Step.LEAD, Status.CRITICAL, text, _more_lead(plan, took))
        text = f"trained on to the deadline and exited {_s(spare)} before the job's end"
        return StepResult(Step.LEAD, Status.OK, text)
    spare = lead - took
    text = f"exited {_s(took)} after the signal: {took / lead:.0%} of the {lead}s lead"
    if took > lead:
        text += f"; at the time limit Slurm would kill it {_s(-spare)} before it is done"
        return StepResult(Step.LEAD, Status.CRITICAL, text, _more_lead(plan, took))
    if took * SAFETY > lead:
        text += f", {_s(spare)} to spare: less than the {SAFETY:g}x headroom the shim keeps"
        return StepResult(Step.LEAD, Status.WARNING, text, _more_lead(plan, took))
    return StepResult(Step.LEAD, Status.OK, f"{text} ({_s(spare)} to spare)")


def _not_exited(plan: Plan, obs: Observation, lead: int, at: float) -> StepResult | None:
    """The training began to stop but had not ended when the drill gave up waiting."""
    if obs.saving_seen_at is None:
        return None  # it never began to stop: `reached` says so
    took = max(0.0, (obs.gave_up_at or at + lead) - at)
    text = f"still saving {_s(took)} after the signal: more than the {lead}s lead, Slurm would "
    text += "kill it"
    return StepResult(Step.LEAD, Status.CRITICAL, text, _more_lead(plan, took))


def _more_lead(plan: Plan, took: float) -> str:
    spec = plan.signal
    want = max(60, math.ceil(SAFETY * took / 60.0) * 60)
    flags = ("B:" if spec is None or spec.batch else "") + (spec.name if spec else "USR1")
    return f"raise the lead: --signal {flags}@{want} (twice the {_s(took)} it took), or save faster"


def exit_step(plan: Plan, obs: Observation) -> StepResult | None:
    if obs.still_running and obs.stop is not None and obs.sent and obs.signalled_at:
        waited = _s((obs.gave_up_at or obs.signalled_at) - obs.signalled_at)
        text = f"the training stopped, but job {plan.target.job_id} was still running {waited} "
        text += "after the signal: its exit was not seen"
        fix = "see what the batch script runs after the training (nothing may wait after it)"
        return StepResult(Step.EXIT, Status.WARNING, text, fix)
    if not obs.sent or obs.still_running or obs.grace_ended:
        return None
    code, want = obs.exit_code, plan.expected_code
    if code is None:
        why = "no batch-script record and Slurm no longer says"
        return StepResult(Step.EXIT, Status.UNKNOWN, f"exit code unknown ({why})")
    meaning = "requeue me" if want == plan.facts.requeue_exit_code and want else "stopped"
    died = _died(plan, obs)
    if died is not None:
        return died
    if code == want:
        return StepResult(Step.EXIT, Status.OK, f"exit code {code} ({meaning}), as expected")
    text = f"exit code {code}, expected {want} ({meaning})"
    if code == 1 and want and plan.facts.launcher:
        fix = f"{plan.facts.launcher} reports a rank's {want} as 1: start the ranks with srun"
        return StepResult(Step.EXIT, Status.CRITICAL, text, fix)
    if code == 0 and want:
        fix = "the shim was not asked to requeue (RTOOL_AUTO_REQUEUE=1, rtool submit "
        return StepResult(Step.EXIT, Status.CRITICAL, text, fix + "--auto-requeue)")
    return StepResult(Step.EXIT, Status.CRITICAL, text)


def _died(plan: Plan, obs: Observation) -> StepResult | None:
    """The batch shell (Slurm's `0:N`) or the training's process (exit 128+N) died of a signal:
    whatever the exit code, nothing handled it."""
    if obs.shell_signal:
        name = signame(obs.shell_signal)
        text = f"the batch shell died of {name} (Slurm: {obs.slurm_state or 'FAILED'} "
        text += f"0:{obs.shell_signal}), though the exit code reads {obs.exit_code}"
        return StepResult(Step.EXIT, Status.CRITICAL, text, reach_hint(plan))
    if obs.exit_signal and obs.exit_code is not None:
        name = signame(obs.exit_signal)
        text = f"exit code {obs.exit_code}: the training's process died of {name} "
        text += f"(128+{obs.exit_signal}), expected {plan.expected_code}"
        return StepResult(Step.EXIT, Status.CRITICAL, text, wrapper_hint(plan, obs.exit_signal))
    return None


JUDGES: tuple[tuple[Step, Judge], ...] = (
    (Step.SIGNAL, signal_step),
    (Step.REACHED, reached_step),
    (Step.SAVE, save_step),
    (Step.LEAD, lead_step),
    (Step.EXIT, exit_step),
    (Step.REQUEUE, requeue_step),
    (Step.RESUME, resume_step),
)


def judge(plan: Plan, obs: Observation) -> Report:
    """Every step's verdict and the headline: the first step that broke, or what worked."""
    steps = []
    for step, fn in JUDGES:
        got = fn(plan, obs)
        steps.append(got if got is not None else StepResult(step, None, "not reached"))
    report = Report(plan, steps, "", obs)
    report.headline = headline(report)
    return report


def headline(report: Report) -> str:
    plan = report.plan
    run = f"run {plan.target.run}" if plan is not None else "the run"
    broken = report.broken()
    if broken is not None:
        fix = f"; {broken.fix}" if broken.fix else ""
        return f"{run}: {broken.step.value}: {broken.text}{fix}"
    spec = plan.signal.sbatch() if plan is not None and plan.signal is not None else "?"
    if plan is not None and plan.preempt is not None:
        spec = f"a preemption on partition {plan.preempt.partition}, {grace_text(plan)}"
    return f"{run}: the stop path works ({spec}): " + "; ".join(
        s.text for s in report.steps if s.step in (Step.SAVE, Step.LEAD, Step.RESUME)
    )
