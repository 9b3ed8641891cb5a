"""The drill's verdict, step by step, on what a drill can see (pure): every way the stop path
breaks is named at the step that broke, with what to change."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rtool.core.alert import Status
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.drill.model import Mode, Observation, Plan, Step, Target
from rtool.drill.script import ScriptFacts
from rtool.drill.verdict import judge
from rtool.slurm_templates.specs import validate_signal

T0 = 1_000_000.0
TARGET = Target(run="llm", job_name="llm", job_id="88_3", raw_id="91", array_job_id="88")


def plan(**kw: object) -> Plan:
    facts = kw.pop("facts", ScriptFacts(rtool_template=True))
    base = Plan(
        target=TARGET,
        signal=validate_signal(str(kw.pop("signal", "B:USR1@60"))),
        facts=facts,  # type: ignore[arg-type]
        heartbeat="/r/hb.json",
        records="/r/hb.json.attempts",
        mode=Mode.ARRAY,
        expected_code=0,
        next_job="88_4",
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def stopped(step: int = 120, save: float = 4.0, began: float = 1.0, **kw: object) -> Heartbeat:
    values: dict[str, object] = dict(
        state=RunState.STOPPED,
        time=T0 + began + save,
        job_id="91",
        array_job_id="88",
        array_task_id="3",
        step=step,
        stop_step=step,
        stop_reason="signal",
        stop_detail="SIGUSR1",
        last_saved_step=step,
        last_save_time=T0 + began + save,
        last_save_seconds=save,
        stop_time=T0 + began + save,
        exit_code=0,
    )
    values.update(kw)
    return Heartbeat(**values)  # type: ignore[arg-type]


def resumed(at: int) -> Heartbeat:
    return Heartbeat(
        state=RunState.RUNNING, time=T0 + 30, job_id="92", array_job_id="88",
        array_task_id="4", started=T0 + 20, step=at + 3, step_at_start=at,
    )  # fmt: skip


def seen(**kw: object) -> Observation:
    values: dict[str, object] = dict(
        ready=Heartbeat(state=RunState.RUNNING, time=T0 - 1, job_id="91", step=100),
        signalled_at=T0,
        stop=stopped(),
        ended_at=T0 + 5.5,
        exit_code=0,
        next_job="88_4",
        resumed=resumed(121),
    )
    values.update(kw)
    return Observation(**values)  # type: ignore[arg-type]


def verdicts(p: Plan, o: Observation) -> dict[Step, tuple[Status | None, str, str]]:
    return {s.step: (s.status, s.text, s.fix) for s in judge(p, o).steps}


def test_a_drill_that_passes_says_each_step_and_the_figures() -> None:
    report = judge(plan(), seen())
    assert report.status is Status.OK and report.broken() is None
    v = verdicts(plan(), seen())
    assert all(status is Status.OK for status, _, _ in v.values())
    assert "saved step 120 in 4.0s" in v[Step.SAVE][1]
    assert "exited 5.5s after the signal: 9% of the 60s lead (54.5s to spare)" in v[Step.LEAD][1]
    assert "job 88_4 started at step 121: the saved step + 1" in v[Step.RESUME][1]
    assert report.lines()[0].startswith("DRILL OK - run llm: the stop path works (B:USR1@60)")


def test_a_save_slower_than_the_lead_is_critical_and_says_what_lead_would_do() -> None:
    o = seen(stop=stopped(save=75.0), ended_at=T0 + 76.0)
    report = judge(plan(), o)
    assert report.status is Status.CRITICAL and report.broken().step is Step.LEAD  # type: ignore[union-attr]
    _, text, fix = verdicts(plan(), o)[Step.LEAD]
    assert "exited 76.0s after the signal: 127% of the 60s lead" in text
    assert fix.startswith("raise the lead: --signal B:USR1@180")
    assert "lead:" in report.headline and fix in report.headline


def test_a_stop_using_more_than_half_the_lead_is_a_warning() -> None:
    o = seen(stop=stopped(save=35.0), ended_at=T0 + 36.0)
    status, text, fix = verdicts(plan(), o)[Step.LEAD]
    assert status is Status.WARNING and "24.0s to spare" in text and "@120" in fix


def test_no_signal_is_critical_and_nothing_is_sent() -> None:
    p = dataclasses.replace(plan(), signal=None)
    v = verdicts(p, Observation())
    assert v[Step.SIGNAL][0] is Status.CRITICAL and "--signal B:USR1@600" in v[Step.SIGNAL][2]
    assert {v[s][0] for s in (Step.REACHED, Step.SAVE, Step.RESUME)} == {None}


def test_a_signal_to_the_steps_that_never_arrives_says_to_use_b() -> None:
    p = plan(signal="USR1@60")
    o = Observation(
        ready=Heartbeat(state=RunState.RUNNING, time=T0 - 1, job_id="91", step=100),
        signalled_at=T0,
        still_running=True,
        last=Heartbeat(state=RunState.RUNNING, time=T0 + 100, job_id="91", step=600),
    )
    status, text, fix = verdicts(p, o)[Step.REACHED]
    assert status is Status.CRITICAL and "never reached the training" in text
    assert "--signal=B:USR1@60" in fix
    assert verdicts(p, o)[Step.EXIT][0] is None


def test_a_launcher_that_eats_the_signal_is_named() -> None:
    p = plan(facts=ScriptFacts(rtool_template=True, launcher="torchrun"))
    o = Observation(signalled_at=T0, exit_code=1, slurm_state="FAILED")
    status, text, fix = verdicts(p, o)[Step.REACHED]
    assert status is Status.CRITICAL and "without the training stopping" in text
    assert "torchrun" in fix and "srun" in fix


def test_a_batch_shell_that_dies_of_the_signal_says_to_trap_it() -> None:
    p = plan(facts=ScriptFacts(rtool_template=False))
    o = Observation(signalled_at=T0, exit_code=138, exit_signal=10, slurm_state="FAILED")
    status, text, fix = verdicts(p, o)[Step.REACHED]
    assert status is Status.CRITICAL and "died of SIGUSR1" in text and "trap" in fix


def test_failed_and_timed_out_saves_and_no_save() -> None:
    for code, words in ((87, "raised"), (88, "save_timeout")):
        o = seen(stop=stopped(exit_code=code), exit_code=code)
        status, text, _ = verdicts(plan(), o)[Step.SAVE]
        assert status is Status.CRITICAL and words in text
    o = seen(stop=stopped(last_saved_step=100, last_save_time=T0 - 50))
    status, text, fix = verdicts(plan(), o)[Step.SAVE]
    assert status is Status.CRITICAL and "nothing was saved" in text and "mark_saved" in fix


def test_the_exit_code_of_an_auto_requeued_job() -> None:
    p = plan(mode=Mode.AUTO_REQUEUE, expected_code=85)
    ok = verdicts(p, seen(exit_code=85, requeued=True))
    assert ok[Step.EXIT][0] is Status.OK and ok[Step.REQUEUE][0] is Status.OK
    zero = verdicts(p, seen(exit_code=0))
    assert zero[Step.EXIT][0] is Status.CRITICAL and "--auto-requeue" in zero[Step.EXIT][2]
    torch = plan(mode=Mode.AUTO_REQUEUE, expected_code=85, facts=ScriptFacts(launcher="torchrun"))
    assert "start the ranks with srun" in verdicts(torch, seen(exit_code=1))[Step.EXIT][2]
    lost = verdicts(p, seen(exit_code=85, requeued=False, slurm_state="COMPLETED"))
    assert lost[Step.REQUEUE][0] is Status.CRITICAL and "scontrol requeue" in lost[Step.REQUEUE][2]


def test_nothing_to_continue_the_run_is_critical_without_a_signal() -> None:
    v = verdicts(plan(mode=Mode.NONE, next_job=None), Observation())
    assert v[Step.REQUEUE][0] is Status.CRITICAL and "--array" in v[Step.REQUEUE][2]
    assert v[Step.SIGNAL][0] is None


def test_resume_at_the_wrong_step_and_resume_not_seen() -> None:
    early = verdicts(plan(), seen(resumed=resumed(101)))[Step.RESUME]
    assert early[0] is Status.CRITICAL and "20 step(s) done twice" in early[1]
    late = verdicts(plan(), seen(resumed=resumed(130)))[Step.RESUME]
    assert late[0] is Status.CRITICAL and "skipped" in late[1]
    waiting = verdicts(plan(), seen(resumed=None, next_reason="Priority"))[Step.RESUME]
    assert waiting[0] is Status.WARNING and "pending: Priority" in waiting[1]
    told = verdicts(plan(no_requeue=True), seen(resumed=None))[Step.RESUME]
    assert told[0] is Status.OK and "would start at step 121" in told[1]


def test_the_deadline_mode_judges_against_the_jobs_end() -> None:
    t = dataclasses.replace(TARGET, end_time=T0 + 300)
    p = plan(target=t)
    ok = verdicts(p, seen(deadline_mode=True, ended_at=T0 + 280))[Step.LEAD]
    assert ok[0] is Status.OK and "20.0s before the job's end" in ok[1]
    late = verdicts(p, seen(deadline_mode=True, ended_at=T0 + 310))[Step.LEAD]
    assert late[0] is Status.CRITICAL


def test_not_ready_and_a_failed_scancel_are_unknown() -> None:
    assert judge(plan(), Observation(not_ready="no step")).status is Status.UNKNOWN
    r = judge(plan(), Observation(signalled_at=T0, signal_error="exit 1"))
    assert r.status is Status.UNKNOWN and all(s.status is None for s in r.steps[1:])


_hb = st.one_of(
    st.none(),
    st.builds(
        Heartbeat,
        state=st.sampled_from(list(RunState)),
        time=st.floats(T0 - 100, T0 + 1000),
        job_id=st.sampled_from(["91", "92"]),
        step=st.one_of(st.none(), st.integers(0, 500)),
        step_at_start=st.one_of(st.none(), st.integers(0, 500)),
        stop_step=st.one_of(st.none(), st.integers(0, 500)),
        last_saved_step=st.one_of(st.none(), st.integers(0, 500)),
        last_save_time=st.one_of(st.none(), st.floats(T0 - 100, T0 + 1000)),
        last_save_seconds=st.one_of(st.none(), st.floats(0, 500)),
        stop_time=st.one_of(st.none(), st.floats(T0 - 100, T0 + 1000)),
        exit_code=st.one_of(st.none(), st.integers(0, 255)),
    ),
)


@given(
    mode=st.sampled_from(list(Mode)),
    signal=st.sampled_from(["B:USR1@60", "USR2@600", "B:TERM@5"]),
    stop=_hb,
    last=_hb,
    again=_hb,
    code=st.one_of(st.none(), st.integers(0, 255)),
    sent=st.booleans(),
    running=st.booleans(),
    no_requeue=st.booleans(),
    preempt=st.booleans(),
    shell=st.one_of(st.none(), st.integers(1, 31)),
    grace_ended=st.booleans(),
)
def test_any_observation_gets_seven_steps_and_a_broken_one_is_named(
    mode: Mode, signal: str, stop: Heartbeat | None, last: Heartbeat | None,
    again: Heartbeat | None, code: int | None, sent: bool, running: bool, no_requeue: bool,
    preempt: bool, shell: int | None, grace_ended: bool,
) -> None:  # fmt: skip
    kw: dict[str, Any] = dict(
        mode=mode, no_requeue=no_requeue, expected_code=85 * (mode is Mode.AUTO_REQUEUE)
    )
    p = preempt_plan(**kw) if preempt else plan(signal=signal, **kw)
    o = Observation(
        ready=last, signalled_at=T0 if sent else None, stop=stop, last=last,
        still_running=running, exit_code=code, resumed=again, ended_at=T0 + 10,
        shell_signal=shell, exit_signal=code - 128 if code and code > 128 else None,
        grace_ended=grace_ended and preempt,
    )  # fmt: skip
    report = judge(p, o)
    assert [s.step for s in report.steps] == list(Step)
    broken = report.broken()
    assert (broken is None) == (report.status is Status.OK)
    if broken is not None:
        assert broken.text in report.headline


def test_a_stop_on_slurms_term_after_the_batch_shell_died_of_usr1_is_critical() -> None:
    # #SBATCH --signal=B:USR1@30, `srun python train.py`, no trap: bash dies of the USR1
    # (Slurm: FAILED 0:10); the training saves only on the TERM Slurm sends its tasks then.
    p = plan(signal="B:USR1@30", facts=ScriptFacts(uses_srun=True))
    o = seen(stop=stopped(stop_detail="SIGTERM"), shell_signal=10, slurm_state="FAILED")
    report = judge(p, o)
    v = verdicts(p, o)
    assert report.status is Status.CRITICAL and report.broken().step is Step.REACHED  # type: ignore[union-attr]
    status, text, fix = v[Step.REACHED]
    assert (
        "not on the SIGUSR1 the drill sent but on the SIGTERM Slurm sent the job's tasks " in text
    )
    assert "when the batch shell died of SIGUSR1 (at the time limit that TERM comes only " in text
    assert "drop B: so Slurm signals the srun tasks (--signal=USR1@30)" in fix
    assert "trap 'kill -USR1 $pid' USR1; srun python train.py & pid=$!" in fix
    status, text, _ = v[Step.EXIT]
    assert status is Status.CRITICAL
    assert "the batch shell died of SIGUSR1 (Slurm: FAILED 0:10), though the exit code" in text
    assert "DRILL OK" not in report.lines()[0]


def test_a_plain_script_whose_shell_dies_says_exec_or_trap() -> None:
    p = plan(facts=ScriptFacts(uses_srun=False))
    o = Observation(signalled_at=T0, exit_code=0, shell_signal=10, slurm_state="FAILED")
    status, text, fix = verdicts(p, o)[Step.REACHED]
    assert status is Status.CRITICAL and "the batch shell died of SIGUSR1" in text
    assert "exec the training (exec python train.py" in fix and "trap" in fix


def test_exit_138_says_the_wrapper_died_of_usr1_and_what_to_change() -> None:
    # rtool submit's template forwards USR1 to a wrapper script that runs the training
    # without exec: the wrapper dies of it, the batch script records 138.
    o = Observation(signalled_at=T0, exit_code=138, exit_signal=10, slurm_state="COMPLETED")
    status, text, fix = verdicts(plan(), o)[Step.REACHED]
    assert status is Status.CRITICAL
    assert "the training's process died of SIGUSR1 (exit code 138 = 128+10)" in text
    assert "exec the training from it (exec python train.py)" in fix
    o = seen(exit_code=138, exit_signal=10)
    status, text, fix = verdicts(plan(), o)[Step.EXIT]
    assert (
        status is Status.CRITICAL
        and "exit code 138: the training's process died of SIGUSR1" in text
    )
    assert "(128+10), expected 0" in text and "exec the training" in fix and "trap USR1" in fix


def test_every_broken_step_names_what_to_change() -> None:
    cases = [
        (plan(facts=ScriptFacts(uses_srun=True)), seen(stop=stopped(stop_detail="SIGTERM"))),
        (plan(), Observation(signalled_at=T0, exit_code=138, exit_signal=10)),
        (plan(facts=ScriptFacts()), Observation(signalled_at=T0, exit_code=0, shell_signal=10)),
        (plan(), seen(exit_code=138, exit_signal=10)),
    ]
    for p, o in cases:
        broken = judge(p, o).broken()
        assert broken is not None and broken.fix, broken
        assert any(w in broken.fix for w in ("B:", "trap", "exec", "rtool submit")), broken.fix


def test_the_stop_a_later_attempt_carries_over_is_the_drilled_attempts() -> None:
    from rtool.drill.drive import carried_stop

    later = dataclasses.replace(
        resumed(121), stop_reason="signal", stop_detail="SIGUSR1", stop_step=120,
        stop_time=T0 + 5, stop_job_id="91", exit_code=0, last_saved_step=120,
        last_save_time=T0 + 5, last_save_seconds=4.0,
    )  # fmt: skip
    got = carried_stop(later, TARGET, T0)
    assert got is not None and got.job_id == "91" and got.state is RunState.STOPPED
    assert (got.stop_step, got.last_saved_step) == (120, 120)
    assert verdicts(plan(), seen(stop=got))[Step.SAVE][0] is Status.OK
    assert carried_stop(dataclasses.replace(later, stop_job_id="90"), TARGET, T0) is None
    assert carried_stop(dataclasses.replace(later, stop_time=T0 - 60), TARGET, T0) is None
    own = carried_stop(dataclasses.replace(later, last_save_time=T0 + 25), TARGET, T0)
    assert own is not None and own.last_saved_step is None  # the later attempt's own save


def preempt_plan(grace: float = 20.0, **kw: object) -> Plan:
    from rtool.drill.model import Preempt

    pre = Preempt("low", grace, "GraceTime of partition low")
    return plan(signal=f"TERM@{int(grace)}", preempt=pre, **kw)
