"""The job watchdog reads a finished run as finished (rtool/watchdogs/jobdone.py): the done
marker counts when Slurm confirms its attempt (COMPLETED, exit 0) and the name's newest jobs
ended as a finish does; the run's ledger counts alone. Pure checks on squeue records and real
heartbeat files, Slurm's confirmation given as its answer; on Slurm: tests/runs/test_runs_live.py
and tests/hardening (a marker Slurm does not confirm)."""

from __future__ import annotations

import time
from pathlib import Path

from rtool.core.alert import Status
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.slurm import SqueueJob
from rtool.core.state import StateDir
from rtool.runs import names
from rtool.runs.model import Ledger
from rtool.watchdogs.config import JobWatch
from rtool.watchdogs.job import JobObservation, check_one
from rtool.watchdogs.jobdone import RunView, finished_heartbeat, finished_step, observe


def job(job_id: str, state: str, array: str | None = None) -> SqueueJob:
    return SqueueJob(
        job_id=job_id,
        array_job_id=array or job_id.split("_")[0],
        array_task="1" if "_" in job_id else None,
        state=state,
        reason=None,
        user="me",
        partition="debug",
        nodes=1,
        time_used=None,
        time_limit=None,
        start_time=None,
        submit_time=None,
        nodelist="n1",
        name="train",
    )


def marker(hb: Path, array_job_id: str | None, step: int = 99, run: str = "train") -> None:
    beat = Heartbeat(
        state=RunState.FINISHED, time=time.time(), run=run, array_job_id=array_job_id, step=step
    )
    Path(f"{hb}.done").write_text(beat.to_json())


def test_a_done_marker_counts_when_slurm_says_its_array_ended_as_a_finish_does(
    tmp_path: Path,
) -> None:
    hb = tmp_path / "hb.json"
    marker(hb, "88")
    view = RunView("train", None, finished_heartbeat(str(hb), "train"), confirmed=True)
    finished = [job("88_3", "COMPLETED"), job("88_4", "CANCELLED"), job("88_5", "CANCELLED")]
    assert finished_step(view, finished) == (True, 99)
    # the marker alone, without Slurm's word for its attempt, is no finish
    unconfirmed = RunView("train", None, view.done, confirmed=False)
    assert finished_step(unconfirmed, finished) == (False, None)
    assert finished_step(view, []) == (True, 99)  # squeue forgot the jobs: the marker is left
    # the marker is an older run's: the newest array of that name died
    assert finished_step(view, [*finished, job("90_1", "FAILED")])[0] is False
    # the marker's own array ended in a failure (a task after the finishing one)
    assert finished_step(view, [job("88_3", "COMPLETED"), job("88_4", "NODE_FAIL")])[0] is False
    assert finished_step(RunView("train"), finished) == (False, None)  # no marker, no ledger


def test_a_marker_of_another_run_or_a_heartbeat_still_running_is_not_a_finish(
    tmp_path: Path,
) -> None:
    hb = tmp_path / "hb.json"
    marker(hb, "88", run="other")
    assert finished_heartbeat(str(hb), "train") is None
    Path(f"{hb}.done").unlink()
    hb.write_text(Heartbeat(state=RunState.RUNNING, time=time.time(), run="train").to_json())
    assert finished_heartbeat(str(hb), "train") is None
    hb.write_text(Heartbeat(state=RunState.FINISHED, time=time.time(), step=7).to_json())
    assert finished_heartbeat(str(hb), "train") is not None  # a heartbeat that says finished
    assert finished_heartbeat(None, "train") is None


def test_the_ledger_alone_says_finished() -> None:
    led = Ledger(run="train")
    led.finished = True
    assert finished_step(RunView("train", led), [job("88_4", "CANCELLED")])[0] is True


def test_the_job_watch_finds_the_heartbeat_rtool_submit_recorded(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    hb = tmp_path / "hb.json"
    sub = names.Submission(
        run="llama-7b",
        job_name="train",
        job_id="88",
        workdir=str(tmp_path),
        kill_switch="k",
        save_switch="s",
        heartbeat=str(hb),
        submitted=time.time(),
    )
    names.save(state, sub)
    marker(hb, "88", step=1234, run="llama-7b")
    spec = JobWatch(name="train")
    obs = JobObservation(jobs=[job("88_1", "COMPLETED"), job("88_2", "CANCELLED")])
    asked: list[str] = []
    obs.views = observe(state, [spec], lambda path: asked.append(path) or True)
    assert asked == [str(hb)]  # Slurm is asked about the heartbeat rtool submit recorded
    res = check_one(spec, obs, time.time())
    assert (res.status, res.summary) == (Status.OK, "train finished at step 1234 (the run is done)")
    obs.views = observe(state, [spec], lambda path: False)  # Slurm does not confirm it
    assert check_one(spec, obs, time.time()).status is Status.CRITICAL
    obs.views.clear()  # what the watchdog said before: a finished run read as a missing job
    res = check_one(spec, obs, time.time())
    assert res.status is Status.CRITICAL and "neither running nor queued" in res.summary
