"""The drill's verdict (pure) of a preemption (`--preempt`: the grace instead of the lead) and
of a stop the drill did not see end."""

from __future__ import annotations

from rtool.core.alert import Status
from rtool.core.heartbeat import RunState
from rtool.drill.model import Observation, Step
from rtool.drill.verdict import judge
from tests.drill.test_verdict import T0, plan, preempt_plan, seen, stopped, verdicts


def test_a_preemption_that_saves_within_the_grace_is_ok_and_says_the_grace() -> None:
    o = seen(stop=stopped(stop_detail="SIGTERM", save=3.0), ended_at=T0 + 4.0)
    report = judge(preempt_plan(), o)
    v = verdicts(preempt_plan(), o)
    assert report.status is Status.OK, report.lines()
    assert (
        "SIGTERM sent to every task of job 88_3's steps, not the batch shell" in v[Step.SIGNAL][1]
    )
    assert (
        "exited 4.0s after the SIGTERM: 20% of the 20s grace (GraceTime of partition low)"
        in (v[Step.LEAD][1])
    )
    assert "a preemption on partition low, the 20s grace" in report.headline


def test_a_preemption_whose_save_outlasts_the_grace_names_the_numbers_and_the_fix() -> None:
    slow = seen(stop=stopped(stop_detail="SIGTERM", save=30.0), ended_at=T0 + 31.0)
    status, text, fix = verdicts(preempt_plan(), slow)[Step.LEAD]
    assert status is Status.CRITICAL and "exited 31.0s after the SIGTERM: 155% of the 20s" in text
    assert "ask the admins for GraceTime=120 (twice the 31.0s it took) on partition low" in fix
    cut = Observation(
        ready=seen().ready, signalled_at=T0, saving_seen_at=T0 + 1, grace_ended=True,
        requeued=True, last=stopped(state=RunState.SAVING, longest_save_seconds=45.0),
    )  # fmt: skip
    v = verdicts(preempt_plan(), cut)
    assert (
        v[Step.LEAD][0] is Status.CRITICAL and "still saving when the 20s grace" in v[Step.LEAD][1]
    )
    assert "GraceTime=120 (twice the 45.0s it took)" in v[Step.LEAD][2]
    assert v[Step.REQUEUE][0] is Status.OK and "Slurm requeued job 88_3" in v[Step.REQUEUE][1]
    # an earlier save of the run longer than the grace: a warning even when this one fitted
    known = seen(stop=stopped(stop_detail="SIGTERM", longest_save_seconds=25.0))
    status, text, _ = verdicts(preempt_plan(), known)[Step.LEAD]
    assert status is Status.WARNING and "longest measured save took 25.0s" in text


def test_a_preemption_that_never_reaches_the_training_says_srun() -> None:
    o = Observation(ready=seen().ready, signalled_at=T0, grace_ended=True, requeued=True)
    status, text, fix = verdicts(preempt_plan(), o)[Step.REACHED]
    assert status is Status.CRITICAL and "did not stop on SIGTERM within the 20s grace" in text
    assert "start the training with srun" in fix


def test_a_stop_still_under_way_when_the_drill_gives_up_is_critical_at_lead() -> None:
    # seen on 24.11 under load: a 20 s save against an 8 s lead, the job not yet ended when
    # the drill stopped waiting: never "DRILL OK" with the lead not judged
    o = Observation(
        ready=seen().ready, signalled_at=T0, saving_seen_at=T0 + 3, still_running=True,
        gave_up_at=T0 + 23, stop=None,
    )  # fmt: skip
    report = judge(plan(signal="B:USR1@8"), o)
    status, text, fix = verdicts(plan(signal="B:USR1@8"), o)[Step.LEAD]
    assert report.status is Status.CRITICAL and status is Status.CRITICAL
    assert "still saving 23.0s after the signal: more than the 8s lead" in text
    assert fix.startswith("raise the lead: --signal B:USR1@60")


def test_a_training_that_stopped_in_a_job_that_did_not_end_is_judged_by_its_stop() -> None:
    o = seen(still_running=True, ended_at=None, gave_up_at=T0 + 135, exit_code=None)
    v = verdicts(plan(), o)
    assert v[Step.LEAD][0] is Status.OK and "exited 5.0s after the signal" in v[Step.LEAD][1]
    status, text, fix = v[Step.EXIT]
    assert status is Status.WARNING and "was still running 135s after the signal" in text
    assert fix
