"""A whole training through an array on the real local Slurm: every task is stopped by the
time limit (the shim's --exit-before-end, and Slurm's signal when it comes first), saves, and
the next task resumes; the union of the steps is exactly 0..N-1, each step once, and
finished() cancels the tasks left."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from devtools.demo.observe import account, saves_by_pid
from rtool.core.slurm import Slurm
from tests.e2e.conftest import TOY, RtoolRun, outputs_of, steps_of
from tests.helpers import wait_for

STEPS = 250  # 25 s of training; each task trains ~10 s
STOP = re.compile(r"rtool\.shim: stopping at step (\d+): (time_limit|signal)")


@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_array_trains_every_step_once_across_time_limits(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    state = json.dumps(str(tmp_path / "state"))
    (tmp_path / "rtool.toml").write_text(f"[state]\ndir = {state}\n")
    run = tmp_path / "run"
    toy_args = ["--steps", str(STEPS), "--step-seconds", "0.1", "--dir", str(run)]
    job = rtool(
        *("submit", str(TOY), "--job-name", job_name, "--array", "0-9%1"),
        *("--time", "0:01:00", "--signal", "B:USR1@55", "--exit-before-end", "50s"),
        *("--heartbeat", str(run / "heartbeat.json"), "--python", sys.executable),
        *("--args", shlex.join(toy_args), "--parsable"),
    ).stdout.strip()

    wait_for(lambda: not slurm.squeue(names=[job_name], states="PENDING,RUNNING"), 150, 1, "end")

    lines = steps_of(run)
    outputs = outputs_of(tmp_path, f"{job_name}-*.out")
    # every step exactly once, across the tasks, none lost, none repeated
    assert [s.step for s in lines] == list(range(STEPS))
    acc = account(lines, saves_by_pid(outputs))
    assert acc.ok and acc.redone == [] and acc.final_checkpoint == STEPS - 1, acc.as_dict()
    assert acc.runs >= 2 and len({s.task for s in lines}) == acc.runs
    # each run but the last stopped on the time limit after saving; the next resumed right after
    texts = [p.read_text() for p in sorted(tmp_path.glob(f"{job_name}-*.out"))]
    stops = [int(m[1]) for t in texts for m in STOP.finditer(t)]
    assert len(stops) == acc.runs - 1
    assert [first for _, first in acc.resumes][1:] == [s + 1 for s in stops]
    assert sum("training finished" in t for t in texts) == 1
    # finished() cancelled the array's pending tasks: no task after the last one trained
    records = slurm.show_job(job)
    ran = {r["ArrayTaskId"] for r in records if r["JobState"] == "COMPLETED"}
    assert ran == {s.task for s in lines}
    assert any(r["JobState"] == "CANCELLED" for r in records)
    assert (run / "heartbeat.json.done").exists()
    # issue 35.12: the ledger agrees with the training's own log: nothing lost or redone, every
    # step gained; without accounting too, where a time-limited attempt is not COMPLETED and
    # the time queued is unknown (the batch script's records have no submit time)
    hb = str(run / "heartbeat.json")
    text = rtool("history", job_name, "--heartbeat", hb, "--no-accounting").stdout
    assert ", queued unknown, " in text and "steps lost 0 (redone 0)" in text, text
    for more in (["--no-accounting"], []):  # degraded first: nothing stored from sacct yet
        hist = rtool("history", job_name, "--heartbeat", hb, "--json", *more)
        data = json.loads(hist.stdout)
        tot, atts = data["totals"], data["ledger"]["attempts"]
        assert tot["steps_lost"] == 0 and tot["steps_redone"] == 0, (more, tot, atts)
        assert tot["steps_gained"] == STEPS and data["ledger"]["best_step"] == STEPS - 1, tot
        if more:
            limited = [a for a in atts if a["stop_reason"] == "time_limit"]
            assert len(limited) == acc.runs - 1, atts
            assert {a["state"] for a in limited} == {"TIMEOUT"}, atts
            assert tot["queued_s"] is None
