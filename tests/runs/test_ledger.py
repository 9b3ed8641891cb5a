# ruff: noqa: E501  (captured sacct lines are kept whole)
"""The ledger builder, totals and verdicts on captured sacct text, records and heartbeats."""

from __future__ import annotations

from datetime import datetime

import pytest

from rtool.core.heartbeat import ErrorInfo, Heartbeat, RunState
from rtool.core.slurm import parse_sacct, parse_squeue
from rtool.runs import health, ledger
from rtool.runs.attempt_records import parse_records
from rtool.runs.finish import Claim
from rtool.runs.render import table
from rtool.runs.totals import totals

# JobID|JobIDRaw|State|ExitCode|NodeList|Submit|Start|End|ElapsedRaw|Partition|JobName
SACCT = """\
30_0|31|TIMEOUT|0:0|n1|2026-11-23T14:00:00|2026-11-23T14:00:10|2026-11-23T14:10:10|600|debug|llm
30_1|32|NODE_FAIL|0:0|n2|2026-11-23T14:00:00|2026-11-23T14:10:20|2026-11-23T14:15:20|300|debug|llm
30_2|33|FAILED|1:0|n3|2026-11-23T14:00:00|2026-11-23T14:15:30|2026-11-23T14:15:50|20|debug|llm
30_3|34|FAILED|1:0|n1|2026-11-23T14:00:00|2026-11-23T14:16:00|2026-11-23T14:16:20|20|debug|llm
30_[4-9%1]|30|PENDING|0:0|None assigned|2026-11-23T14:00:00|Unknown|Unknown|0|debug|llm
"""
# squeue -h -o SQUEUE_FORMAT: the pending rest of the array
QUEUE = "30_[4-9%1]|30|4-9%1|PENDING|JobArrayTaskLimit|me|debug|1|0:00|10:00|N/A|2026-11-23T14:00:00||llm\n"


def _t(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").astimezone().timestamp()


def _hb(task: int, step: int, start: int, saved: int, state: RunState, **kw: object) -> Heartbeat:
    return Heartbeat(
        state=state,
        time=_t("2026-11-23T14:16:20"),
        run="llm",
        job_id=str(31 + task),
        array_job_id="30",
        array_task_id=str(task),
        step=step,
        step_at_start=start,
        last_saved_step=saved,
        **kw,  # type: ignore[arg-type]
    )


def _records() -> str:
    # the end records of tasks 0 and 1 carry the heartbeat as each attempt ended
    t0 = _hb(0, 600, 0, 500, RunState.STOPPED, stop_reason="time_limit").to_json().strip()
    t1 = _hb(1, 780, 501, 700, RunState.RUNNING).to_json().strip()
    return (
        f'{{"event":"end","job_id":"31","array_job_id":"30","array_task_id":"0","restart":0,"node":"n1","nodelist":"n1","time":{_t("2026-11-23T14:10:09")},"rc":75,"heartbeat":{t0}}}\n'
        f'{{"event":"end","job_id":"32","array_job_id":"30","array_task_id":"1","restart":0,"node":"n2","nodelist":"n2","time":{_t("2026-11-23T14:15:19")},"rc":null,"heartbeat":{t1}}}\n'
        "not json\n"
    )


def _build(prev=None, hb=None, logs=None, sacct=SACCT, claim=None):  # type: ignore[no-untyped-def]
    logs = logs or {}
    inp = ledger.Inputs(
        run="llm",
        now=_t("2026-11-23T14:16:30"),
        sacct=parse_sacct(sacct),
        claim=claim,
        records=parse_records(_records()).records,
        heartbeat=hb,
        queue=parse_squeue(QUEUE),
        total_steps=5000,
    )
    return ledger.build(prev, inp, lambda a: (f"log-{a.job_id}", logs.get(a.job_id, ())))


def test_sacct_ledger_with_steps_lost_signatures_and_crash_loop() -> None:
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",)
    hb = _hb(
        3,
        701,
        701,
        700,
        RunState.CRASHED,
        error=ErrorInfo("torch.OutOfMemoryError", "CUDA out of memory"),
    )
    led = _build(hb=hb, logs={"30_2": oom, "30_3": oom})
    a = led.attempts
    assert [x.job_id for x in a] == ["30_0", "30_1", "30_2", "30_3"] and led.accounting
    assert [x.number for x in a] == [1, 2, 3, 4]
    assert a[1].state == "NODE_FAIL" and a[1].nodes == ("n2",)
    assert a[1].signature is not None and a[1].signature.name == "node-fail"
    assert (
        a[0].stop_reason == "time_limit"
        and a[0].signature is not None
        and a[0].signature.name == "timeout"
    )
    assert (a[0].step_start, a[0].step_end, a[0].last_saved_step) == (0, 600, 500)
    # task 0 reached 600, task 1 ran again from 501: 100 steps done again; task 1 reached 780 and
    # the run ran again from 701 afterwards: 80 lost
    assert a[0].steps_lost == 100 and a[1].steps_lost == 80
    assert a[3].error == "torch.OutOfMemoryError: CUDA out of memory"
    assert a[3].signature is not None and a[3].signature.name == "cuda-oom"
    assert a[2].signature is not None and a[2].signature.name == "cuda-oom"
    assert a[0].queue_wait == 10.0
    queue = health.Queue.of(parse_squeue(QUEUE))
    assert queue.pending_count == 6 and queue.hold_targets() == ["30"]
    # attempt 3 has no heartbeat (steps unknown) but died in 20 s; attempt 4 made no progress
    loop = health.crash_loop(led, 2, 300)
    assert loop is not None and [x.number for x in loop] == [3, 4]
    assert health.crash_loop(led, 3, 300) is None  # the node failure made progress
    assert not health.exhausted(led, queue)
    tot = totals(led, led.updated or 0)
    # gained: steps 0-700 kept (780 was reached, but 701-780 were done again: not gained);
    # attempt 4 crashed at its first step 701 with no save of its own: that step is lost too
    assert tot.attempts == 4 and tot.steps_gained == 701 and tot.steps_lost == 181
    assert tot.steps_redone == 180 and led.best_step == 700
    assert tot.queued_s == 10 + 620 + 930 + 960
    assert tot.computing_s == 600 + 300 + 20 + 20
    text = table(led, tot, led.updated or 0)
    assert "NODE_FAIL" in text and "CUDA out of memory" in text and "goodput" in text


def test_previous_ledger_keeps_what_sources_forget_and_best_step() -> None:
    first = _build(hb=_hb(1, 750, 501, 700, RunState.RUNNING))
    # the end record saw more than the heartbeat (780), but 701-780 were done again: the
    # highest kept step is 700 (a heartbeat of an attempt that is over is not live)
    assert first.best_step == 700
    second = _build(prev=first)
    assert second.best_step == 700 and second.best_step_at == first.best_step_at
    assert second.attempts[1].step_end == 780


def test_finished_run_is_not_exhausted() -> None:
    hb = _hb(3, 5000, 701, 5000, RunState.FINISHED)
    completed = SACCT.replace("30_3|34|FAILED|1:0", "30_3|34|COMPLETED|0:0")
    led = _build(hb=hb, sacct=completed)
    assert led.finished
    assert not health.exhausted(led, health.Queue.of([]))
    assert health.crash_loop(led, 1, 300) is None


@pytest.mark.parametrize("how", ["heartbeat", "marker", "empty marker"])
def test_finished_needs_slurms_word_not_the_marker_alone(how: str) -> None:
    """Finding 6: a done marker (even an empty one) or a heartbeat saying finished in an attempt
    that exited non-zero is not a finished run."""
    hb = _hb(3, 5000, 701, 5000, RunState.FINISHED if how == "heartbeat" else RunState.RUNNING)
    claim = (
        None if how == "heartbeat" else Claim(None if how == "empty marker" else ("30_3", 0), True)
    )
    led = _build(hb=hb, claim=claim)  # 30_3 ended FAILED 1:0 in sacct
    assert not led.finished
    assert health.exhausted(led, health.Queue.of([]))
    ok = _build(
        hb=hb, claim=claim, sacct=SACCT.replace("30_3|34|FAILED|1:0", "30_3|34|COMPLETED|0:0")
    )
    assert ok.finished == (how != "empty marker" or hb.state is RunState.FINISHED)


def test_degraded_mode_from_records_and_squeue() -> None:
    run_q = "41|41|N/A|RUNNING|None|me|debug|1|0:05|10:00|2026-11-23T14:20:00|2026-11-23T14:19:00|n3|llm\n"
    recs = parse_records(
        '{"event":"start","job_id":"40","array_job_id":"","array_task_id":"","restart":0,"node":"n1","nodelist":"n1","time":1000,"rc":null,"heartbeat":null}\n'
        '{"event":"end","job_id":"40","array_job_id":"","array_task_id":"","restart":0,"node":"n1","nodelist":"n1","time":1030,"rc":1,"heartbeat":null}\n'
        '{"event":"start","job_id":"40","array_job_id":"","array_task_id":"","restart":1,"node":"n2","nodelist":"n2","time":1100,"rc":null,"heartbeat":null}\n'
    ).records
    inp = ledger.Inputs(run="llm", now=1200.0, sacct=None, records=recs, queue=parse_squeue(run_q))
    led = ledger.build(None, inp)
    assert not led.accounting and "no accounting" in led.note
    states = [(a.job_id, a.restart, a.state, a.nodes) for a in led.attempts]
    assert states == [
        ("40", 0, "ENDED", ("n1",)),
        ("40", 1, "GONE", ("n2",)),  # started, no end record, not in the queue any more
        ("41", 0, "RUNNING", ("n3",)),
    ]
    assert led.attempts[0].exit_code == 1
    # the next sweep: job 41 left the queue without an end record
    later = ledger.build(led, ledger.Inputs(run="llm", now=1300.0, sacct=None, records=recs))
    assert later.attempts[-1].state == "GONE" and later.attempts[-1].ended == 1300.0


@pytest.mark.parametrize("before", ["crashed", "time_limit"])
def test_the_stop_of_an_attempt_comes_only_from_its_own_heartbeat(before: str) -> None:
    """Issue 35.10: the shim carries the previous job's stop over until this job stops; a
    finished attempt whose heartbeat still names job 33's stop shows no stop of its own."""
    from rtool.app.timeline.run import run_page

    completed = SACCT.replace("30_3|34|FAILED|1:0", "30_3|34|COMPLETED|0:0")
    carried = {"stop_reason": before, "stop_job_id": "33", "stop_time": _t("2026-11-23T14:15:50")}
    hb = _hb(3, 5000, 701, 5000, RunState.FINISHED, **carried)
    led = _build(hb=hb, sacct=completed)
    last = led.attempts[3]
    assert last.job_id == "30_3" and last.finished and last.stop_reason is None
    row = table(led, totals(led, led.updated or 0), led.updated or 0).splitlines()[4]
    assert row.startswith("4 ") and before not in row and "COMPLETED" in row, row
    page = run_page(led, led.updated or 0)
    attempt4 = page[page.index('<tr data-attempt="4"') :].split("</tr>", 1)[0]
    assert f"<td>{before}</td>" not in attempt4 and "<td>-</td>" in attempt4
    # its own stop (stop_job_id is this job, after this launch started) is shown
    own = {"stop_reason": "time_limit", "stop_job_id": "34", "stop_time": _t("2026-11-23T14:16:19")}
    hb = _hb(3, 900, 701, 900, RunState.STOPPED, started=_t("2026-11-23T14:16:00"), **own)
    assert _build(hb=hb).attempts[3].stop_reason == "time_limit"
