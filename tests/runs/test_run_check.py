# ruff: noqa: E501  (captured squeue lines are kept whole)
"""The run watchdog's verdicts on built ledgers (pure): finished, crash loop and its hold,
budget, restart storm, OK."""

from __future__ import annotations

from rtool.core.alert import Status
from rtool.core.slurm import parse_squeue
from rtool.runs.config import RunWatch
from rtool.runs.model import Attempt, Ledger
from rtool.runs.signatures.base import Signature
from rtool.watchdogs.base import ActionKind
from rtool.watchdogs.run import RunObservation, check_one

PENDING = "50_[3-9%1]|50|3-9%1|PENDING|JobArrayTaskLimit|me|debug|1|0:00|10:00|N/A|2026-11-23T14:00:00||llm\n"
RUNNING = (
    "50_2|50|2|RUNNING|None|me|debug|1|1:00|10:00|2026-11-23T14:00:00|2026-11-23T14:00:00|n1|llm\n"
)
NOW = 10_000.0


def _att(
    n: int, start: int, end: int | None, state: str = "TIMEOUT", t0: float = 0.0, **kw: object
) -> Attempt:
    return Attempt(
        run="llm",
        number=n,
        job_id=f"50_{n - 1}",
        nodes=("n1",),
        started=t0,
        ended=t0 + 600,
        state=state,
        exit_code=0,
        step_start=start,
        step_end=end,
        **kw,  # type: ignore[arg-type]
    )


def _check(led: Ledger, queue: str, **spec: object) -> tuple[Status, str, dict, list]:  # type: ignore[type-arg]
    res = check_one(RunObservation(RunWatch(name="llm", **spec), led, parse_squeue(queue)), NOW)  # type: ignore[arg-type]
    return res.status, res.summary, res.fields, res.actions


def test_ok_finished_and_budget() -> None:
    led = Ledger(
        run="llm",
        attempts=[_att(1, 0, 100), _att(2, 101, 200)],
        best_step=200,
        best_step_at=NOW - 10,
        total_steps=300,
    )
    status, summary, _, _ = _check(led, RUNNING + PENDING)
    assert status is Status.OK and "running (job 50_2 on n1) at step 200" in summary
    # 2000 steps to go, 99.5 per attempt, 8 attempts left (~796): WARNING budget
    led.total_steps = 2200
    status, summary, _, _ = _check(led, RUNNING + PENDING)
    assert status is Status.WARNING and "budget: 2000 steps to go" in summary and "~796" in summary
    led.finished = True
    status, summary, _, _ = _check(led, "")
    assert status is Status.OK and "finished at step 200 after 2 attempt(s)" in summary


def test_crash_loop_holds_the_rest_once_and_says_how_to_release() -> None:
    oom = Signature("cuda-oom", "CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory")
    led = Ledger(
        run="llm",
        attempts=[
            _att(1, 0, 100),
            _att(
                2,
                101,
                101,
                "FAILED",
                signature=oom,
                log_tail=("torch.OutOfMemoryError: CUDA out of memory",),
            ),
            _att(3, 101, 101, "FAILED", signature=oom),
        ],
        best_step=101,
        best_step_at=NOW - 5,
    )
    status, summary, fields, actions = _check(led, PENDING)
    assert status is Status.CRITICAL and "crash loop: attempts 2-3" in summary
    assert "CUDA out of memory" in summary and "scontrol release 50" in summary
    assert [(a.kind, a.job) for a in actions] == [(ActionKind.HOLD, "50")]
    assert fields["attempt"] == "3" and fields["nodes"] == "n1" and fields["state"] == "FAILED"
    _, summary, _, actions = _check(led, PENDING, on_crash_loop="none")
    assert actions == [] and "7 attempt(s) still queued" in summary
    # a time limit that kept steps is not a bad attempt: no loop with K=3
    status, _, _, _ = _check(led, PENDING, crash_loop=3)
    assert status is Status.OK


def test_restart_storm_and_exhausted() -> None:
    many = [_att(i, i * 10, i * 10 + 10, t0=NOW - 3000 + i * 100) for i in range(1, 9)]
    led = Ledger(run="llm", attempts=many, best_step=90, best_step_at=NOW - 5)
    status, summary, _, _ = _check(led, RUNNING)
    assert (
        status is Status.WARNING
        and "restart storm: 8 attempts and in-place restarts in the last hour" in summary
    )
    status, summary, fields, _ = _check(led, "")
    assert status is Status.CRITICAL and "exhausted without finished() at step 90" in summary
    assert fields["attempt"] == "8"


def test_a_checkpoint_set_aside_by_the_shim_is_a_warning_naming_both() -> None:
    aside = "step_000300 (incomplete: missing step_000300/COMPLETE) -> step_000300.set-aside-x.incomplete"
    first = _att(1, 0, 320, state="NODE_FAIL")
    second = _att(2, 201, 260, state="RUNNING", resumed_from="step_000200", set_aside=aside)
    led = Ledger(run="llm", attempts=[first, second], best_step=320, best_step_at=NOW - 5)
    status, summary, fields, _ = _check(led, RUNNING)
    assert status is Status.WARNING, summary
    assert summary == (f"llm checkpoint set aside: {aside}; resumed from step_000200 (attempt 2)")
    assert fields["attempt"] == "2"
    # a later attempt that set nothing aside: OK again
    third = _att(3, 261, 300, state="RUNNING", resumed_from="step_000250")
    led.attempts.append(third)
    status, _, _, _ = _check(led, RUNNING)
    assert status is Status.OK


def test_preemptions_before_any_step_are_no_crash_loop() -> None:
    """Attempts preempted before their first step (model loading): REQUEUED by rtool with
    the shim's "preempted" stop, or PREEMPTED by Slurm; none is the training's failure."""
    led = Ledger(
        run="llm",
        attempts=[
            _att(1, 0, 100),
            _att(2, 101, 101, "REQUEUED", stop_reason="preempted"),
            _att(3, 101, 101, "PREEMPTED"),
            _att(4, 101, 101, "COMPLETED", stop_reason="preempted"),
        ],
        best_step=101,
        best_step_at=NOW - 5,
    )
    status, summary, _, actions = _check(led, PENDING, crash_loop=3)
    assert "crash loop" not in summary and actions == [], summary
    led.attempts[1] = _att(2, 101, 101, "FAILED")
    led.attempts[2] = _att(3, 101, 101, "FAILED")
    led.attempts[3] = _att(4, 101, 101, "FAILED")
    status, summary, _, _ = _check(led, PENDING, crash_loop=3)
    assert status is Status.CRITICAL and "crash loop" in summary  # the same, as failures


def test_a_preempted_save_longer_than_the_grace_is_a_warning_with_the_numbers() -> None:
    """The shim records a preempted stop whose save outlasts the partition's GraceTime
    (`save_over_grace`); `watch run` names it and what to change."""
    from rtool.shim.report import preempt_over

    over = preempt_over(5.0, 8.04)["save_over_grace"]
    assert over == "a save takes 8.0s, longer than GraceTime 5s"
    assert preempt_over(20.0, 8.0) == {} and preempt_over(None, 8.0) == {}
    first = _att(1, 0, 100, "PREEMPTED", stop_reason="preempted", save_over_grace=over)
    second = _att(2, 101, 150, "RUNNING")
    led = Ledger(run="llm", attempts=[first, second], best_step=150, best_step_at=NOW - 5)
    status, summary, _, _ = _check(led, RUNNING)
    assert status is Status.WARNING, summary
    assert summary == (
        "llm preempted while saving: a save takes 8.0s, longer than GraceTime 5s (attempt 1); "
        "ask for a longer GraceTime or save more often (save_every) so a preemption saves"
    )
    led = Ledger(
        run="llm",
        attempts=[_att(1, 0, 100, "PREEMPTED", stop_reason="preempted"), second],
        best_step=150,
        best_step_at=NOW - 5,
    )
    assert _check(led, RUNNING)[0] is Status.OK
