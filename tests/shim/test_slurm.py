"""The shim in real jobs on the local Slurm: --signal, EndTime, array cancel and hold."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from rtool.core.slurm.parse import SqueueJob
from tests.helpers import wait_for
from tests.shim.conftest import TOY, run_toy, steps_run

pytestmark = pytest.mark.slurm


def _script(tmp: Path, toy_args: str, **env: str) -> str:
    """A batch script as the templates write it: the training in the background, signals
    forwarded by a trap, exit code 85 turned into a requeue."""
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    return f"""#!/bin/bash
{exports}export TOY_DIR={shlex.quote(str(tmp))}
{shlex.quote(sys.executable)} {shlex.quote(str(TOY))} {toy_args} &
child=$!
trap 'kill -USR1 "$child" 2>/dev/null' USR1
trap 'kill -TERM "$child" 2>/dev/null' TERM
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
wait "$child"; rc=$?
echo "training exit $rc"
if [ "$rc" -eq 85 ]; then scontrol requeue "$SLURM_JOB_ID"; fi
exit "$rc"
"""


ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


def _active(slurm: Slurm, job_name: str) -> list[SqueueJob]:
    return [j for j in slurm.squeue(names=[job_name]) if j.state not in ENDED]


def _wait_gone(slurm: Slurm, job_name: str, timeout: float, out: Path, what: str) -> None:
    """Wait until no job of `job_name` is left; on timeout fail with what Slurm and the job say."""
    deadline = time.monotonic() + timeout
    while _active(slurm, job_name):
        if time.monotonic() > deadline:
            jobs = _active(slurm, job_name)
            shown = [slurm.scontrol("show", "job", j.job_id) for j in jobs]
            logs = "".join(p.read_text()[-2000:] for p in sorted(out.parent.glob("job*.out")))
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}: {jobs}\n{shown}\n{logs}")
        time.sleep(0.5)


def _heartbeat(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_slurm_signal_reaches_the_shim_and_the_run_resumes(
    slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    hb = tmp_path / "heartbeat.json"
    # USR1 as a plain stop signal here (it would otherwise announce the deadline: the run would
    # train on until EndTime - margin; tests/shim/test_deadline.py covers that)
    script = _script(
        tmp_path,
        "--steps 5000 --step-seconds 0.2",
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_DEADLINE_SIGNALS="off",
    )
    out = tmp_path / "job.out"
    # the signal ~30 s in: the training's handler is in place by then even under the suites'
    # load (at 10 s in, CI on 24.11 once killed the training with it: exit 138)
    job = slurm.sbatch(
        ["-J", job_name, "--time=0:03:00", "--signal=B:USR1@150", "-o", str(out)], script=script
    ).job_id
    _wait_gone(slurm, job_name, 150, out, "the job to stop on its --signal")
    text = out.read_text()
    assert "training exit 0" in text, text
    data = _heartbeat(hb)
    assert data["stop_reason"] == "signal" and data["stop_detail"] == "SIGUSR1", data
    assert data["stop_job_id"] == job
    ran = steps_run(tmp_path / "steps.log")
    saved = json.loads((tmp_path / "checkpoint.json").read_text())["step"]
    assert saved == ran[-1] == data["stop_step"] and ran == list(range(saved + 1))
    # the next run (here outside Slurm) continues from exactly the saved step
    code, log = run_toy(tmp_path, "--steps", str(saved + 4), "--step-seconds", "0.01")
    assert code == 0, log
    assert steps_run(tmp_path / "steps.log") == list(range(saved + 4))


def test_slurm_time_limit_from_end_time(slurm: Slurm, job_name: str, tmp_path: Path) -> None:
    hb = tmp_path / "heartbeat.json"
    script = _script(
        tmp_path,
        "--steps 5000 --step-seconds 0.1",
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_EXIT_BEFORE_END="50s",  # --time=1: stop ~10 s after the start
        RTOOL_AUTO_REQUEUE="1",
        RTOOL_MAX_REQUEUES="0",  # no requeue left: exit 0, not 85
    )
    out = tmp_path / "job.out"
    slurm.sbatch(["-J", job_name, "--time=1", "-o", str(out)], script=script)
    _wait_gone(slurm, job_name, 90, out, "the job to stop before its time limit")
    assert "training exit 0" in out.read_text(), out.read_text()
    data = _heartbeat(hb)
    assert data["stop_reason"] == "time_limit", data
    assert "left of the time limit" in str(data["stop_detail"])
    left = float(str(data["stop_detail"]).split("s left")[0])
    assert 40 <= left <= 51, data  # stopped at EndTime - 50 s, not killed at EndTime


def test_slurm_time_limit_shortened_while_running_is_seen_by_the_shim(
    slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    """`scontrol update TimeLimit=` shortens a running job: the shim re-reads the end time
    (every RTOOL_END_TIME_REFRESH) and takes the earlier of it and $SLURM_JOB_END_TIME, which
    24.11 exports fixed at the start; it saves and stops before the new limit."""
    hb = tmp_path / "heartbeat.json"
    script = _script(
        tmp_path,
        "--steps 5000 --step-seconds 0.1",
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_EXIT_BEFORE_END="90s",
        RTOOL_END_TIME_REFRESH="2s",
        RTOOL_AUTO_REQUEUE="1",
        RTOOL_MAX_REQUEUES="0",
    )
    out = tmp_path / "job.out"
    job = slurm.sbatch(["-J", job_name, "--time=10", "-o", str(out)], script=script).job_id
    wait_for(lambda: (tmp_path / "steps.log").exists(), 60, 0.2, "the training to start")
    slurm.scontrol("update", f"jobid={job}", "TimeLimit=2")  # ends 2 min after the start
    _wait_gone(slurm, job_name, 150, out, "the job to stop before its new time limit")
    assert "training exit 0" in out.read_text(), out.read_text()
    data = _heartbeat(hb)
    assert data["stop_reason"] == "time_limit", data
    left = float(str(data["stop_detail"]).split("s left")[0])
    assert 75 <= left <= 91, data  # EndTime (the new one) - 90 s, not the old one - 90 s


def test_slurm_finished_cancels_the_pending_array_tasks(
    slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    hb = tmp_path / "heartbeat.json"
    script = _script(tmp_path, "--steps 5 --step-seconds 0.05", RTOOL_HEARTBEAT=str(hb))
    out = tmp_path / "job-%a.out"
    slurm.sbatch(["-J", job_name, "--array=1-3%1", "-o", str(out)], script=script)
    _wait_gone(slurm, job_name, 60, out, "the array to end")
    tasks = {line.split()[2] for line in (tmp_path / "steps.log").read_text().splitlines()}
    assert tasks == {"task=1"}  # tasks 2 and 3 never ran
    assert Path(f"{hb}.done").exists() and _heartbeat(hb)["state"] == "finished"


def test_slurm_nonfinite_stop_holds_the_pending_tasks(
    slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    script = _script(tmp_path, "--steps 50 --step-seconds 0.05 --nan-at 3", RTOOL_MAX_NONFINITE="2")
    out = tmp_path / "job-%a.out"
    job = slurm.sbatch(["-J", job_name, "--array=1-3%1", "-o", str(out)], script=script).job_id

    def held() -> bool:
        jobs = _active(slurm, job_name)
        return len(jobs) == 1 and jobs[0].state == "PENDING" and jobs[0].reason == "JobHeldUser"

    wait_for(held, 60, 0.5, "the pending tasks to be held")
    text = (tmp_path / "job-1.out").read_text()
    assert "training exit 86" in text and f"scontrol release {job}" in text, text
    assert not (tmp_path / "checkpoint.json").exists()
