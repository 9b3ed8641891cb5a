"""Restart in place on the real local Slurm: a training that crashes or hangs runs again inside
the same allocation (same job, no requeue) from its last checkpoint; the run ledger has each
restart as an entry of its own; a crash whose log names the node ends the attempt with a
requeue that excludes the node; a restarted launch that makes no progress is not restarted
again."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from rtool.runs.inplace import read_restarts
from tests.e2e.conftest import TOY, RtoolRun, steps_of
from tests.helpers import wait_for
from tests.shim.test_slurm import _active

pytestmark = [pytest.mark.slurm]


def _config(tmp: Path) -> None:
    q = json.dumps
    (tmp / "rtool.toml").write_text(
        f"[state]\ndir = {q(str(tmp / 'state'))}\n"
        f"[notify.log]\npath = {q(str(tmp / 'alerts.log'))}\n"
        '[nodes]\nmax_excluded = "50%"\n'  # 1 of the 3 nodes may be excluded
    )


def _submit(rtool: RtoolRun, tmp: Path, name: str, toy: list[str], *extra: str) -> str:
    run = tmp / "job" / "run"
    run.mkdir(parents=True, exist_ok=True)
    args = ["--steps", "200", "--step-seconds", "0.05", "--dir", str(run), *toy]
    return rtool(
        *("submit", str(TOY), "--job-name", name, "--time", "0:05:00"),
        *("--python", sys.executable, "--heartbeat", str(run / "hb.json")),
        *("--args", shlex.join(args), "--parsable", *extra),
        cwd=tmp / "job",
        env={"RTOOL_HEARTBEAT_INTERVAL": "1s"},
    ).stdout.strip()


def _output(tmp: Path) -> str:
    outs = sorted((tmp / "job").glob("*.out"))
    return "".join(p.read_text(errors="replace") for p in outs)


def _pids(run: Path) -> list[int]:
    return list(dict.fromkeys(s.pid for s in steps_of(run)))


@pytest.mark.timeout(240)
def test_a_crash_and_a_hang_are_restarted_in_place_from_the_last_checkpoint(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    _config(tmp_path)
    run = tmp_path / "job" / "run"
    crash, hang = tmp_path / "crash", tmp_path / "hang"
    toy = ["--save-every", "20", "--crash-file", str(crash), "--hang-file", str(hang)]
    job = _submit(rtool, tmp_path, job_name, toy, "--restarts-in-place", "2", "--hang-after", "3s")

    wait_for(lambda: len(steps_of(run)) >= 30, 90, 0.2, "30 steps")
    crash.write_text("a crash on demand\n")
    wait_for(lambda: len(_pids(run)) >= 2 and steps_of(run)[-1].pid == _pids(run)[1], 60, 0.2,
             "the crashed training to run again")  # fmt: skip
    resumed = next(s.step for s in steps_of(run) if s.pid == _pids(run)[1])
    wait_for(lambda: steps_of(run)[-1].step >= resumed + 10, 60, 0.2, "10 more steps")
    hang.touch()
    wait_for(lambda: "hanging at step" in _output(tmp_path), 30, 0.2, "the hang")
    t_hang = time.monotonic()
    wait_for(lambda: len(_pids(run)) >= 3, 60, 0.1, "the hung training to run again")
    back = time.monotonic() - t_hang
    wait_for(lambda: "training finished" in _output(tmp_path), 120, 0.5, "the end")

    lines = steps_of(run)
    assert {s.job for s in lines} == {job} and len(_pids(run)) == 3  # one job, three launches
    assert sorted({s.step for s in lines}) == list(range(200))
    (record,) = slurm.show_job(job)
    assert record["Restarts"] == "0"  # never requeued: restarted inside the allocation
    assert back < 3 + 20, back  # the threshold, the dump, the check, a 1 s wait, start-up
    out = _output(tmp_path)
    assert "waiting 1s before launch 2" in out  # the second restart waits 1 s ...
    assert "before launch 1" not in out  # ... the first is at once
    assert "restarting the training in place (launch 1) after crashed: RuntimeError" in out
    assert "restarting the training in place (launch 2) after hung: no step for" in out
    assert "py-spy dump" in out  # the hung launch's stacks are in the log

    # the ledger: both restarts as entries of their own, with what they cost
    recs = read_restarts(str(run / "hb.json.restarts"))
    assert [(r.launch, r.cause, r.rc) for r in recs] == [(1, "crashed", 1), (2, "hung", 89)]
    hist = rtool("history", job_name, "--heartbeat", str(run / "hb.json"), "--json")
    data = json.loads(hist.stdout)
    entries = data["ledger"]["restarts"]
    assert [e["cause"] for e in entries] == ["crashed", "hung"], entries
    assert all(e["steps_redone"] is not None and e["steps_redone"] <= 20 for e in entries)
    assert all(e["lost_s"] is not None and e["lost_s"] > 0 for e in entries)
    assert entries[1]["lost_s"] >= 3  # the hang's threshold is part of it
    assert data["totals"]["restarts_in_place"] == 2


@pytest.mark.timeout(180)
def test_a_restarted_launch_that_makes_no_progress_is_not_restarted_again(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    _config(tmp_path)
    run = tmp_path / "job" / "run"
    job = _submit(rtool, tmp_path, job_name, ["--crash-at", "0"], "--restarts-in-place", "3")
    wait_for(lambda: not _active(slurm, job_name), 120, 0.5, "the job to end")
    out = _output(tmp_path)
    assert out.count("rtool: launch ") == 2, out[-3000:]  # launch 0, one restart, no more
    assert "restarted training made no progress" in out
    assert steps_of(run) == []
    (rec,) = slurm.show_job(job)
    assert rec["JobState"] == "FAILED" and rec["ExitCode"] == "1:0", rec


@pytest.mark.timeout(240)
def test_a_crash_whose_log_names_the_node_is_requeued_away_from_it(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    _config(tmp_path)
    run = tmp_path / "job" / "run"
    crash = tmp_path / "crash"
    toy = ["--save-every", "20", "--crash-file", str(crash)]
    job = _submit(
        rtool, tmp_path, job_name, toy, "--requeue", "--no-preflight", "--", "--open-mode=append"
    )
    wait_for(lambda: len(steps_of(run)) >= 25, 90, 0.2, "25 steps")
    first = slurm.squeue(names=[job_name])[0].nodelist
    xid = f"NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus ({first})"
    crash.write_text(xid + "\n")

    def elsewhere() -> bool:
        jobs = [j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING"]
        return bool(jobs) and jobs[0].nodelist != first

    wait_for(elsewhere, 120, 0.5, "the attempt to run again on another node")
    (record,) = slurm.show_job(job)
    assert record["Restarts"] == "1" and first in record.get("ExcNodeList", ""), record
    out = _output(tmp_path)
    assert f"pre-flight failed on {first}: requeued away from {first}" in out, out[-3000:]
    assert "restarting the training in place" not in out
    suspects = json.loads(rtool("nodes", "--json", "--no-refresh").stdout)["suspects"]
    assert [s["node"] for s in suspects] == [first] and "GPU XID" in suspects[0]["why"]
    wait_for(lambda: steps_of(run)[-1].step >= 40, 90, 0.2, "training again")
    assert min(s.step for s in steps_of(run) if s.pid != steps_of(run)[0].pid) == 20


@pytest.mark.timeout(240)
def test_a_crash_at_the_same_step_before_any_save_is_a_crash_loop(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    """Issue 35.5: every launch runs steps 0-4 and crashes before its first save; after the
    in-place restarts `rtool watch run` said 'exhausted without finished() at step 4'."""
    _config(tmp_path)
    run = tmp_path / "job" / "run"
    _submit(rtool, tmp_path, job_name, ["--crash-at", "4"], "--restarts-in-place", "2")
    wait_for(lambda: not _active(slurm, job_name), 150, 0.5, "the job to end")
    out = _output(tmp_path)
    assert out.count("rtool: launch ") == 3, out[-3000:]  # launch 0 and both restarts
    assert "made no progress" not in out  # each launch ran steps 0-4: progress, not saved
    assert [s.step for s in steps_of(run)] == [0, 1, 2, 3] * 3
    res = rtool(
        *("watch", "run", job_name, "--heartbeat", str(run / "hb.json"), "--no-notify"),
        check=False,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"RUN CRITICAL - {job_name} crash loop: attempt 1 launch 1, attempt 1 made no " in (
        res.stdout
    ), res.stdout
    assert "exhausted" not in res.stdout
