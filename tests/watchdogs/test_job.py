"""job watchdog against real jobs on the local Slurm (fails, never skips, without Slurm)."""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from rtool.core.alert import Status
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.watchdogs.base import Action, ProbeEnv
from rtool.watchdogs.config import JobWatch, LogWatch
from rtool.watchdogs.job import JobWatchdog
from rtool.watchdogs.log import LogWatchdog
from rtool.watchdogs.runner import query_for, sweep
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm


def submit(slurm: Slurm, name: str, *args: str, wrap: str = "sleep 300") -> str:
    return slurm.sbatch(["--job-name", name, "--output=/dev/null", *args, "--wrap", wrap]).job_id


def state_of(slurm: Slurm, job_id: str) -> tuple[str, str | None]:
    jobs = slurm.squeue(job_ids=[job_id])
    return (jobs[0].state, jobs[0].reason) if jobs else ("GONE", None)


def test_running_job_is_ok(slurm, job_name, cli):
    job = submit(slurm, job_name)
    wait_for(lambda: state_of(slurm, job)[0] == "RUNNING", 60, what="job running")
    r = cli("watch", "job", "--name", job_name, "--no-notify")
    assert r.code == 0, r.out
    assert r.out.startswith(f"JOB OK - {job_name} running (job {job},")


def test_own_job_never_counts_as_the_watched_job(slurm, job_name, cli, monkeypatch):
    job = submit(slurm, job_name)
    wait_for(lambda: state_of(slurm, job)[0] == "RUNNING", 60, what="job running")
    monkeypatch.setenv("SLURM_JOB_ID", job)  # as if the watchdog ran inside that job
    r = cli("watch", "job", "--name", job_name, "--no-notify")
    assert r.code == 2
    assert f"{job_name} neither running nor queued" in r.out


def test_held_job_warns_with_the_reason(slurm, job_name, cli):
    job = submit(slurm, job_name, "--hold")
    wait_for(lambda: state_of(slurm, job)[1] == "JobHeldUser", 30, what="held")
    r = cli("watch", "job", "--name", job_name, "--no-notify")
    assert r.code == 1
    assert f"JOB WARNING - {job_name} pending" in r.out and "held (JobHeldUser)" in r.out


def test_pending_on_a_dependency_ok_until_max_pending(slurm, job_name, cli):
    first = submit(slurm, job_name + "-first")
    try:
        job = submit(slurm, job_name, f"--dependency=afterok:{first}")
        wait_for(lambda: state_of(slurm, job)[1] == "Dependency", 30, what="dependency")
        r = cli("watch", "job", "--name", job_name, "--no-notify")
        assert r.code == 0 and "(Dependency)" in r.out, r.out
        time.sleep(1.1)
        r = cli("watch", "job", "--name", job_name, "--max-pending", "1s", "--no-notify")
        assert r.code == 1 and "(limit 1s), reason Dependency" in r.out, r.out
    finally:
        slurm.scancel(name=job_name + "-first")


def test_dependency_never_satisfied_is_critical(slurm, job_name, cli):
    first = submit(slurm, job_name + "-bad", "--begin=now+2", wrap="exit 1")
    try:
        job = submit(slurm, job_name, f"--dependency=afterok:{first}")
        wait_for(lambda: state_of(slurm, job)[1] == "DependencyNeverSatisfied", 60, what="never")
        r = cli("watch", "job", "--name", job_name, "--no-notify")
        assert r.code == 2
        assert "DependencyNeverSatisfied: will never start by itself" in r.out
    finally:
        slurm.scancel(name=job_name + "-bad")


def test_absent_job_is_critical(slurm_cluster, job_name, cli):
    r = cli("watch", "job", "--name", job_name, "--name", job_name + "-2", "--no-notify")
    assert r.code == 2
    assert r.out.splitlines() == [
        f"JOB CRITICAL - {job_name} neither running nor queued",
        f"JOB CRITICAL - {job_name}-2 neither running nor queued",
    ]


def test_regex_and_user_filter(slurm, job_name, cli):
    job = submit(slurm, job_name + "-x7")
    wait_for(lambda: state_of(slurm, job)[0] == "RUNNING", 60, what="job running")
    try:
        r = cli("watch", "job", "--name", job_name + r"-x\d", "--regex", "--no-notify")
        assert r.code == 0 and f"(job {job}," in r.out
        r = cli("watch", "job", "--name", job_name + "-x7", "--user", "nobody", "--no-notify")
        assert r.code == 2
    finally:
        slurm.scancel(name=job_name + "-x7")


def test_unreachable_slurmctld_is_unknown_not_missing(slurm_cluster, tmp_path, cli, monkeypatch):
    conf = Path(slurm_cluster.conf).read_text()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    (tmp_path / "slurm.conf").write_text(
        re.sub(r"SlurmctldPort=\d+", f"SlurmctldPort={dead}", conf)
    )
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    r = cli("watch", "job", "--name", "anything", "--timeout", "5s", "--no-notify")
    assert r.code == 3, r.out
    assert r.out.startswith("JOB UNKNOWN - anything: squeue failed")


@pytest.mark.parametrize("n", [1, 20])
def test_one_squeue_and_at_most_one_sacct_per_sweep(slurm_cluster, tmp_path, n):
    """One squeue for every name; one sacct for their NODE_FAIL attempts since the last sweep
    (22.05's sacct has no FailedNode field: read from its binary, not asked, so the first sweep
    of a state dir asks once too); nothing else when none of the names is queued."""
    names = [f"w{i}" for i in range(n)]
    watchdogs = [
        JobWatchdog([JobWatch(name=x) for x in names]),
        LogWatchdog([LogWatch(path=str(tmp_path / "x.log"), job_name="w0")]),
    ]
    state = StateDir(tmp_path / "st")
    for first in (True, False):
        s = Slurm(timeout=30)
        results = sweep(watchdogs, ProbeEnv(s, state, query_for(watchdogs)), 10)
        assert len(results) == n + 1
        calls = Counter(c[0] for c in s.calls)
        assert calls["squeue"] == 1 and set(calls) <= {"squeue", "sacct"}, calls
        assert calls["sacct"] == 1, (first, calls)
        assert all(r.status == Status.CRITICAL for r in results[:n])


def test_a_finished_runs_done_marker_costs_one_sacct_once_not_every_sweep(
    slurm, job_name, tmp_path
):
    """A finished run still watched: Slurm confirms its done marker once (one sacct beside the
    NODE_FAIL lookup's), and later sweeps ask only the lookup's one sacct."""
    from rtool.core.heartbeat import Heartbeat, RunState

    job = submit(slurm, job_name, wrap="true")
    wait_for(lambda: any(r.state == "COMPLETED" for r in slurm.sacct(job_ids=[job])), 60)
    hb = tmp_path / "hb.json"
    done = Heartbeat(state=RunState.FINISHED, time=time.time(), run="r", job_id=job, step=9)
    Path(f"{hb}.done").write_text(done.to_json())
    wd = JobWatchdog([JobWatch(name=job_name, run="r", heartbeat=str(hb))])
    state = StateDir(tmp_path / "st")
    counts = []
    for _ in range(3):
        s = Slurm(timeout=30)
        [result] = sweep([wd], ProbeEnv(s, state, query_for([wd])), 10)
        assert result.status == Status.OK and "finished" in result.summary, result.summary
        counts.append(Counter(c[0] for c in s.calls)["sacct"])
    assert counts == [2, 1, 1], counts


def test_stack_dump_srun_targets_an_array_task_by_its_numeric_id(slurm, job_name):
    """`srun --jobid=A_T` is rejected ("Invalid numeric value"): the dump resolves the task's
    own JobId, and srun with that argv really runs inside the task."""
    from rtool.core.proc import run
    from rtool.watchdogs.actions import dump_argv

    array = submit(slurm, job_name, "--array=0-1")
    tasks = [f"{array}_0", f"{array}_1"]

    def running() -> bool:
        return all(state_of(slurm, t)[0] == "RUNNING" for t in tasks)

    wait_for(running, 30, 0.5, "both array tasks running")
    ids = []
    for task in tasks:
        argv = dump_argv(Action.dump_job(task), slurm)
        [record] = slurm.show_job(task)
        assert argv[:3] == ["srun", f"--jobid={record['JobId']}", "--overlap"]
        ids.append(record["JobId"])
        assert argv[4:6] == ["sh", "-c"] and argv[-1] == job_name  # dumps this job's python only
        res = run([*argv[:6], "echo $SLURM_JOB_ID"], timeout=30, check=False)
        assert (res.returncode, res.stdout.strip()) == (0, record["JobId"]), res.stderr
    assert all(i.isdigit() for i in ids) and len(set(ids)) == 2


def test_stack_dump_of_a_job_shows_its_hung_python_and_no_other(slurm, job_name, tmp_path):
    """`dump:job:J` runs py-spy (rtool's dependency) through srun inside the job, on the
    python processes of that job only (not every python process of the user on the node)."""
    from rtool.watchdogs.actions import dump_stacks

    script = tmp_path / "hung.py"
    script.write_text(
        "import threading\n"
        "def stuck_in_the_job():\n"
        "    threading.Event().wait()\n"
        "stuck_in_the_job()\n"
    )
    job = submit(slurm, job_name, wrap=f"exec {sys.executable} {script}")
    try:
        wait_for(lambda: state_of(slurm, job)[0] == "RUNNING", 30, 0.2, "the job to run")
        wait_for(lambda: _job_python(job), 30, 0.2, "the job's python to start")
        stacks = dump_stacks(Action.dump_job(job), slurm, 60)
        assert "stuck_in_the_job (hung.py:3)" in stacks, stacks
        assert stacks.count("Process ") == 1, stacks  # pytest itself is not dumped
    finally:
        slurm.scancel([job])
        wait_for(lambda: not _job_python(job), 30, 0.2, "the job's python to be killed")


def _job_python(job: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if f"SLURM_JOB_ID={job}".encode() in env and b"hung.py" in cmd:
            return True
    return False


def test_a_previous_runs_heartbeat_is_not_a_hang_of_the_running_job(slurm, job_name, tmp_path):
    """After a requeue the job runs with the last run's heartbeat until the new run writes its
    own: that old heartbeat is not this run's hang; the log (never older than the job's start)
    is, and the old run's pid is not the one to dump."""
    import json

    job = submit(slurm, job_name)
    wait_for(lambda: state_of(slurm, job)[0] == "RUNNING", 30, 0.2, "the job to run")
    [sq] = slurm.squeue(job_ids=[job])
    assert sq.start_time is not None
    start = sq.start_time.timestamp()
    hb, log = tmp_path / "heartbeat.json", tmp_path / "train.out"
    state = StateDir(tmp_path / "st")

    def check(stale: str, **fields: object):
        base = {"version": 1, "state": "running", "step": 5, "pid": os.getpid(), "job_id": job}
        hb.write_text(json.dumps({**base, "host": socket.gethostname(), **fields}))
        spec = LogWatch(path=str(log), heartbeat=str(hb), job_name=job_name, stale=stale,
                        dump_stacks=True, on_hang="requeue")  # fmt: skip
        wd = LogWatchdog([spec], 10.0)
        [res] = wd.check(wd.probe(ProbeEnv(slurm, state, wd.squeue_query())), time.time())
        return res

    previous = {"started": start - 3600, "time": start - 1800}  # the run before the requeue
    res = check("10m", **previous)
    assert res.status == Status.OK, res.summary
    assert "heartbeat of this run (none yet; counted from the job's start) written" in res.summary
    # another job's (array task's) heartbeat, however recent its start, is not this run's either
    res = check("10m", job_id="999999", started=time.time(), time=start - 1800)
    assert res.status == Status.OK, res.summary
    # the log of this run counts
    log.write_text("loading the model\n")
    res = check("10m", **previous)
    assert res.status == Status.OK and res.summary.startswith(f"{log} written 0s ago")
    # ... and --stale still holds, from the job's start: a hang, whose actions target the job
    age(log, 3600)
    wait_for(lambda: time.time() - start > 2, 10, 0.2, "2 s into the job")
    res = check("1s", **previous)
    assert res.status == Status.CRITICAL, res.summary
    assert res.summary.startswith("heartbeat of this run (none yet; counted from the job's start)")
    assert res.actions == [Action.dump_job(job), Action.requeue(job)]
    # this run's own heartbeat is still the sharper signal
    res = check("1s", started=start + 0.5, time=start + 0.5)
    assert res.status == Status.CRITICAL and res.summary.startswith("heartbeat not written")
    assert res.actions == [Action.dump_pid(os.getpid()), Action.requeue(job)]


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))
