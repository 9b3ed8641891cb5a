"""In-place restarts in the run ledger (pure): their records read back, their entries (cause,
steps redone, time lost), the crash-loop and restart-storm verdicts counting them, a run that
resumes at the same step called stalled within 3 launches, `rtool history` showing them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rtool.core.alert import Status
from rtool.core.heartbeat import ErrorInfo, Heartbeat, RunState
from rtool.core.slurm import parse_squeue
from rtool.runs import health, ledger
from rtool.runs.config import RunWatch
from rtool.runs.inplace import RestartRecord, append, parse_line, read_restarts, restarts_path
from rtool.runs.model import Attempt, Ledger
from rtool.runs.relaunch import InPlaceRestart
from rtool.runs.render import table
from rtool.runs.totals import totals
from rtool.watchdogs.run import RunObservation, check_one

T0 = 1_800_000_000.0


def _hb(launch: int, start: int | None, step: int | None, t: float, **kw: object) -> Heartbeat:
    return Heartbeat(
        state=kw.pop("state", RunState.RUNNING),  # type: ignore[arg-type]
        time=t,
        run="llm",
        job_id="91",
        array_job_id="88",
        array_task_id="3",
        launch=launch,
        started=t - 60,
        step=step,
        step_at_start=start,
        first_step_time=None if start is None else t - 50,
        last_saved_step=kw.pop("saved", None),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def _rec(launch: int, t: float, hb: Heartbeat | None, cause: str = "crashed", rc: int = 1):
    return RestartRecord("91", "88", 3, 0, "n1", "n1", t, rc, launch, cause, "boom", hb)


def _attempt(start: int | None = 500, end: int | None = 620, **kw: object) -> Attempt:
    return Attempt(
        run="llm",
        number=1,
        job_id="88_3",
        nodes=("n1",),
        started=T0,
        state=str(kw.pop("state", "RUNNING")),
        step_start=start,
        step_end=end,
        **kw,  # type: ignore[arg-type]
    )


def test_records_round_trip_and_bad_lines_are_skipped(tmp_path: Path) -> None:
    hb = _hb(0, 500, 550, T0 + 100, state=RunState.CRASHED, error=ErrorInfo("RuntimeError", "x"))
    rec = _rec(1, T0 + 101, hb)
    assert parse_line(rec.to_line()) == rec
    path = str(tmp_path / "hb.json.restarts")
    assert restarts_path(str(tmp_path / "hb.json.attempts")) == path
    append(path, rec)
    with open(path, "a") as fh:
        fh.write('{"event": "restart", "job_id": "x"}\nnot json\n{"event": "start"}\n')
    append(path, _rec(2, T0 + 200, None, "hung", 89))
    assert [r.launch for r in read_restarts(path)] == [1, 2]
    assert os.stat(path).st_mode & 0o777 == 0o600
    os.chmod(path, 0o666)
    with pytest.raises(OSError):
        read_restarts(path)  # writable by others: refused, like the attempt records
    link = tmp_path / "link.restarts"
    link.symlink_to(path)
    with pytest.raises(OSError):
        append(str(link), rec)  # never through a link


def test_entries_cause_steps_redone_and_time_lost() -> None:
    failed = _hb(0, 500, 550, T0 + 100, state=RunState.STOPPED, saved=529, stop_reason="hung")
    after = _hb(1, 530, 560, T0 + 200)  # the restarted launch resumed at 530
    inp = ledger.Inputs(
        run="llm",
        now=T0 + 300,
        sacct=None,
        heartbeat=after,
        restarts=[_rec(1, T0 + 110, failed, "hung", 89)],
    )
    led = ledger.build(Ledger(run="llm", attempts=[_attempt(None, None)], accounting=False), inp)
    (r,) = led.restarts
    assert (r.job_id, r.restart, r.launch, r.cause, r.exit_code) == ("88_3", 0, 1, "hung", 89)
    assert (r.step_reached, r.resumed_step, r.steps_redone) == (550, 530, 21)
    assert r.lost_s == pytest.approx((T0 + 200 - 50) - (T0 + 100))
    # the attempt starts where its first launch started, whatever its last launch resumed at
    assert led.attempts[0].step_start == 500 and led.attempts[0].step_end == 560
    tot = totals(led, T0 + 300)
    assert tot.restarts_in_place == 1 and tot.steps_lost >= 21
    text = table(led, tot, T0 + 300)
    assert "restarted in place (hung: boom; exit 89): resumed at step 530, 21 steps redone" in text
    assert "1 attempt(s) and 1 in-place restart(s)" in text
    # a later sweep that no longer sees the records keeps the entries
    again = ledger.build(led, ledger.Inputs(run="llm", now=T0 + 400, sacct=None))
    assert again.restarts == led.restarts


RUNNING = (
    "88_3|88|3|RUNNING|None|me|debug|1|1:00|10:00|2026-11-23T14:00:00|2026-11-23T14:00:00|n1|llm\n"
)


def _check(led: Ledger, **spec: object) -> tuple[Status, str]:
    obs = RunObservation(RunWatch(name="llm", **spec), led, parse_squeue(RUNNING))  # type: ignore[arg-type]
    res = check_one(obs, T0 + 1000)
    return res.status, res.summary


def _restart(launch: int, t: float, start: int, reached: int, **kw: object) -> InPlaceRestart:
    """The in-place restart starting `launch`, after the launch before ran start..reached."""
    return InPlaceRestart(
        "llm", "88_3", 0, launch, t, 1, "crashed", "boom", ("n1",),
        process_started=t - 15, process_start_step=start, step_reached=reached, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_crash_loop_and_restart_storm_count_in_place_restarts() -> None:
    # launch 0 crashed with no step after its start, launch 1 likewise: a loop in one attempt
    running = _attempt(500, 500)
    loops = [_restart(1, T0 + 20, 500, 500), _restart(2, T0 + 40, 500, 500)]
    led = Ledger(run="llm", attempts=[running], restarts=loops)
    loop = health.crash_loop(led, 2, 300)
    assert loop is not None and [t.label for t in loop] == [
        "attempt 1 launch 0",
        "attempt 1 launch 1",
    ]
    status, summary = _check(led)
    assert status is Status.CRITICAL, summary
    assert "crash loop: attempt 1 launch 0, attempt 1 launch 1 made no progress" in summary
    assert "restarted in place after crashed: boom" in summary
    # launches that made progress and saved: no loop, but 8 starts in an hour is a storm
    fine = [_restart(i, T0 + 60 * i, 100 * i, 100 * i + 90, last_saved_step=100 * i + 50)
            for i in range(1, 8)]  # fmt: skip
    led = Ledger(run="llm", attempts=[_attempt(100, 800)], restarts=fine)
    assert health.crash_loop(led, 2, 300) is None
    status, summary = _check(led)
    assert status is Status.WARNING and "restart storm: 8 attempts and in-place restarts" in summary


def _attempts_resuming_at(step: int, n: int) -> list[Attempt]:
    """n attempts that each resume at `step`, run 10 minutes (not early), crash before saving."""
    return [
        Attempt(
            run="llm",
            number=i,
            job_id=f"88_{i}",
            nodes=("n1",),
            started=T0 + 700 * i,
            ended=T0 + 700 * i + 600,
            state="FAILED",
            exit_code=1,
            step_start=step,
            step_end=step + 40,
            last_saved_step=step - 1,
        )
        for i in range(1, n + 1)
    ]


def test_a_run_that_always_resumes_at_the_same_step_is_stalled_within_3_launches() -> None:
    two = Ledger(run="llm", attempts=_attempts_resuming_at(500, 2), best_step=540)
    assert _check(two)[0] is not Status.CRITICAL
    three = Ledger(run="llm", attempts=_attempts_resuming_at(500, 3), best_step=540)
    status, summary = _check(three)
    assert status is Status.CRITICAL, summary
    assert "stalled: 3 launches in a row resumed at step 500" in summary
    assert "(attempt 1, attempt 2, attempt 3)" in summary
    # in-place restarts count: 2 attempts, the second restarted in place, again at step 500
    atts = _attempts_resuming_at(500, 2)
    atts[1] = atts[1].with_(state="RUNNING", ended=None)
    again = InPlaceRestart("llm", "88_2", 0, 1, T0 + 1900, 1, "crashed", "x", resumed_step=500)
    led = Ledger(run="llm", attempts=atts, best_step=540, restarts=[again])
    status, summary = _check(led)
    assert status is Status.CRITICAL and "(attempt 1, attempt 2, attempt 2 launch 1)" in summary
    assert _check(led, no_progress=None)[0] is Status.OK
    # one launch that got further and saved in between: not stalled
    led.restarts = [
        InPlaceRestart("llm", "88_2", 0, 1, T0 + 1900, 1, "crashed", "x", resumed_step=541)
    ]
    assert health.no_progress(led, 3) is None


def test_a_rank_that_crashes_at_the_same_step_before_any_save_is_a_crash_loop() -> None:
    """Issue 35.5: every launch runs steps 0-4 and crashes, nothing saved. The attempt's last
    launch counted as not bad (kept = progress - lost, lost unknown = 0), so after the
    restarts it read 'exhausted without finished() at step 4'; nothing saved is nothing kept."""
    ended = _attempt(0, 4, state="FAILED", ended=T0 + 70, exit_code=1)
    restarts = [_restart(1, T0 + 20, 0, 4), _restart(2, T0 + 45, 0, 4, resumed_step=0)]
    led = Ledger(run="llm", attempts=[ended], restarts=restarts, best_step=4)
    obs = RunObservation(RunWatch(name="llm"), led, [])
    res = check_one(obs, T0 + 1000)
    assert res.status is Status.CRITICAL, res.summary
    assert res.summary.startswith(
        "llm crash loop: attempt 1 launch 1, attempt 1 made no progress or died early; last "
        "attempt 1 (job 88_3 on n1, FAILED exit 1)"
    ), res.summary
    assert "exhausted" not in res.summary
    assert health.kept_steps(ended.with_(last_saved_step=None)) == 0
    assert health.kept_steps(ended.with_(last_saved_step=3, steps_lost=1)) == 3


def test_launches_resuming_at_the_same_step_are_stalled_before_exhausted() -> None:
    """Issue 35.5: 'no progress over 3 launches' was only checked after 'exhausted'."""
    ended = _attempt(500, 530, state="FAILED", ended=T0 + 700, exit_code=1, last_saved_step=510)
    restarts = [
        _restart(1, T0 + 200, 500, 530, resumed_step=500, last_saved_step=510),
        _restart(2, T0 + 400, 500, 530, resumed_step=500, last_saved_step=510),
    ]
    led = Ledger(run="llm", attempts=[ended], restarts=restarts)
    res = check_one(RunObservation(RunWatch(name="llm"), led, []), T0 + 1000)
    assert res.status is Status.CRITICAL
    assert res.summary.startswith("llm stalled: 3 launches in a row resumed at step 500"), (
        res.summary
    )
