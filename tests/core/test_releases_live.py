"""Where Slurm 22.05 and 24.11 differ, on the session's real cluster (RTOOL_TEST_SLURM picks the
release; scripts/test runs both): the ExcNodeList update of an array with a running task, and a
user's SLURM_TIME_FORMAT (docs/slurm-releases.md)."""

from __future__ import annotations

import time

import pytest

from devtools.localslurm import releases
from rtool.core.slurm import Slurm, SlurmError, expand_hostlist
from rtool.shim import slurm as shim_slurm
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm
SLEEP = "#!/bin/bash\nsleep 120\n"


def _array_with_a_running_task(slurm: Slurm, job_name: str) -> str:
    array = slurm.sbatch(["-J", job_name, "--array=1-3%1", "-o", "/dev/null"], script=SLEEP).job_id

    def started() -> bool:
        jobs = {j.job_id: j.state for j in slurm.squeue(names=[job_name])}
        return jobs.get(f"{array}_1") == "RUNNING" and f"{array}_[2-3%1]" in jobs

    wait_for(started, 60, what="task 1 running, tasks 2-3 pending")
    return array


def test_excluding_nodes_of_an_array_with_a_running_task_is_judged_by_the_pending_tasks(
    slurm: Slurm, job_name: str
) -> None:
    array = _array_with_a_running_task(slurm, job_name)
    # both releases exit 1 (the running task refuses); 24.11 prints only that refusal, 22.05
    # also `No error` for the pending tasks: rtool reads the pending tasks back instead
    said = slurm.set_excluded(array, ["n2", "n3"])
    assert "no longer pending" in said
    assert ("No error" in said) == (releases.get().name == "22.05")
    pending = [r for r in slurm.show_job(array) if r["JobState"] == "PENDING"]
    assert pending and all(expand_hostlist(r["ExcNodeList"]) == ["n2", "n3"] for r in pending)
    running = next(j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING")
    with pytest.raises(SlurmError):  # a task that runs takes no ExcNodeList: a real failure
        slurm.set_excluded(running.job_id, ["n2"])
    slurm.scancel([array])


def test_a_users_time_format_changes_nothing_rtool_reads(
    slurm: Slurm, job_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SLURM_TIME_FORMAT=relative (`19:24:24`, `25 Nov 2027`) in the user's environment: every
    Slurm call of rtool still reads standard times (the layer and the shim set it)."""
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    job = slurm.sbatch(["-J", job_name, "--time=30", "-o", "/dev/null"], script=SLEEP).job_id
    begin = slurm.sbatch(
        ["-J", job_name, "--begin=now+3600", "-o", "/dev/null"], script=SLEEP
    ).job_id
    wait_for(lambda: slurm.show_job(job)[0]["JobState"] == "RUNNING", 60, what="the job to run")
    now = time.time()
    jobs = {j.job_id: j for j in slurm.squeue(names=[job_name])}  # raised ParseError before
    started = jobs[job].start_time
    assert started is not None and abs(started.timestamp() - now) < 120
    later = jobs[begin].start_time
    assert later is not None and later.timestamp() - now > 3000
    end = shim_slurm.job_end_time(job)
    assert end is not None and abs(end - (started.timestamp() + 1800)) < 2
    wait_for(lambda: slurm.sacct(job_ids=[job]), 30, what="sacct to see the job")
    [rec] = slurm.sacct(job_ids=[job])
    assert rec.start == started.timestamp() and rec.submit is not None
    slurm.scancel([job, begin])
