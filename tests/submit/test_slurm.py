"""Real submissions on the local Slurm: signal forwarding (also through a launcher that dies on
USR1), auto-requeue and its bound, strict one-at-a-time arrays, dependencies, the kill switch."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm
Cli = Callable[..., CliResult]
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}

CHILD = """\
import os, signal, sys, time
out = sys.argv[1]
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
open(out + ".pid", "w").write(str(os.getpid()))
deadline = time.time() + 150
while not got and time.time() < deadline:
    time.sleep(0.2)
time.sleep(1)  # "save a checkpoint"
restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
with open(out, "a") as f:
    f.write(f"USR1 restart={restarts}\\n" if got else "none\\n")
# As rtool.shim does: in auto-requeue mode, ask for a requeue while below the bound.
if got and os.environ.get("RTOOL_AUTO_REQUEUE") == "1":
    if restarts < int(os.environ["RTOOL_MAX_REQUEUES"]):
        sys.exit(int(os.environ["RTOOL_REQUEUE_EXIT_CODE"]))
sys.exit(0 if got else 3)
"""
# A launcher-like parent with no USR1 handler: USR1 would kill it (and its child with it).
LAUNCHER = """\
import subprocess, sys
rc = subprocess.call([sys.executable, *sys.argv[1:]])
open(sys.argv[-1] + ".launcher", "w").write(f"child exited {rc}\\n")
sys.exit(rc)
"""
REQUEUE_ME = """\
import os, sys
with open(sys.argv[1], "a") as f:
    f.write(f"run restart={os.environ.get('SLURM_RESTART_COUNT', '0')}\\n")
sys.exit(int(os.environ["RTOOL_REQUEUE_EXIT_CODE"]))
"""
# Installs its USR1 handler only after 8 s (as a training that loads its model first).
LATE_HANDLER = """\
import os, signal, sys, time
out = sys.argv[1]
open(out + ".started", "w").write(str(os.getpid()))
time.sleep(8)
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
deadline = time.time() + 20
while not got and time.time() < deadline:
    time.sleep(0.2)
open(out, "w").write("USR1\\n" if got else "none\\n")
"""
STAMP = """\
import os, sys, time
with open(sys.argv[1], "a") as f:
    f.write(f"{os.environ['SLURM_ARRAY_TASK_ID']} start {time.time()}\\n")
time.sleep(2)
with open(sys.argv[1], "a") as f:
    f.write(f"{os.environ['SLURM_ARRAY_TASK_ID']} end {time.time()}\\n")
"""


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, text in (
        ("child.py", CHILD),
        ("launcher.py", LAUNCHER),
        ("requeue_me.py", REQUEUE_ME),
        ("stamp.py", STAMP),
        ("late_handler.py", LATE_HANDLER),
        ("sleep.py", "import time\ntime.sleep(120)\n"),
        ("marker.py", "import sys\nopen(sys.argv[1], 'a').write('ran\\n')\n"),
    ):
        (tmp_path / name).write_text(text)
    return tmp_path


def submit(cli: Cli, *args: str) -> str:
    res = cli("submit", "--python", sys.executable, "--parsable", *args)
    assert res.code == 0, res.err
    return res.out.strip()


def record(slurm: Slurm, job_id: str) -> dict[str, str]:
    recs = slurm.show_job(job_id)
    assert recs, f"job {job_id} unknown"
    return recs[0]


def active(slurm: Slurm, name: str) -> list[object]:
    """Jobs of that name still queued or running (squeue also lists recently ended ones)."""
    return [j for j in slurm.squeue(names=[name]) if j.state not in FINAL]


def wait_final(slurm: Slurm, ids: list[str], timeout: float) -> None:
    def done() -> bool:
        return all(all(r.get("JobState") in FINAL for r in slurm.show_job(i) or [{}]) for i in ids)

    wait_for(done, timeout=timeout, interval=1, what=f"jobs {ids} to finish")


def test_signal_reaches_python_under_srun_and_under_a_launcher_and_auto_requeue(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    common = ["--time", "2", "--signal", "B:USR1@110"]
    d = str(run_dir)
    a = submit(cli, "child.py", "--args", f"{d}/a", "--job-name", job_name, *common,
               "--auto-requeue", "--max-requeues", "1")  # fmt: skip
    launch = f"{sys.executable} {d}/launcher.py"
    b = submit(cli, "child.py", "--args", f"{d}/b", "--job-name", job_name, *common,
               "--launcher", launch)  # fmt: skip
    c = submit(cli, "requeue_me.py", "--args", f"{d}/c", "--job-name", job_name, "--time", "5",
               "--signal", "B:USR1@60", "--auto-requeue", "--max-requeues", "1")  # fmt: skip
    monkeypatch.setenv("RTOOL_FORWARD_VIA_SRUN", "1")  # the multi-node path, through srun
    e = submit(cli, "child.py", "--args", f"{d}/e", "--job-name", job_name, *common,
               "--launcher", launch)  # fmt: skip
    wait_final(slurm, [a, b, c, e], timeout=200)
    out = {j: (run_dir / f"{job_name}-{j}.out").read_text() for j in (a, b, c, e)}

    # python directly under srun: signalled in both runs; requeued once, then the bound holds
    assert (run_dir / "a").read_text() == "USR1 restart=0\nUSR1 restart=1\n", out[a]
    rec = record(slurm, a)
    assert (rec["JobState"], rec["Restarts"], rec["ExitCode"]) == ("COMPLETED", "1", "0:0")
    assert "requeueing job" in out[a]
    assert "exit code 0 after SIGUSR1; not requeueing" in out[a]

    # under a launcher that dies on USR1: only the python child (which handles it) got it
    for j, name in ((b, "b"), (e, "e")):
        assert (run_dir / name).read_text() == "USR1 restart=0\n", out[j]
        assert (run_dir / f"{name}.launcher").read_text() == "child exited 0\n"
        child_pid = (run_dir / f"{name}.pid").read_text()
        assert f"sent SIGUSR1 to {child_pid} on" in out[j], out[j]
        assert record(slurm, j)["ExitCode"] == "0:0"
    assert "forwarding through srun" in out[e] and "forwarding through srun" not in out[b]

    # the requeue exit code: requeued once, then the bound holds
    assert (run_dir / "c").read_text() == "run restart=0\nrun restart=1\n"
    rec = record(slurm, c)
    assert (rec["JobState"], rec["Restarts"], rec["ExitCode"]) == ("FAILED", "1", "85:0")
    assert "not requeueing: 1 restart(s) reached --max-requeues 1" in out[c]


def test_a_signal_before_the_handler_stays_pending_until_the_training_handles_it(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    d, common = str(run_dir), ["--job-name", job_name, "--time", "5", "--signal", "B:USR1@60"]
    a = submit(cli, "late_handler.py", "--args", f"{d}/a", *common)
    monkeypatch.setenv("RTOOL_FORWARD_VIA_SRUN", "1")  # the multi-node path, through srun
    e = submit(cli, "late_handler.py", "--args", f"{d}/e", *common)
    for name in ("a", "e"):
        wait_for((run_dir / f"{name}.started").exists, 60, 0.2, f"{name}'s training to start")
    slurm.scancel([a, e], signal="USR1", batch=True)  # the batch shells, before any handler
    wait_final(slurm, [a, e], timeout=60)
    for j, name in ((a, "a"), (e, "e")):
        out = (run_dir / f"{job_name}-{j}.out").read_text()
        assert (run_dir / name).read_text() == "USR1\n", out
        assert "SIGUSR1 pending" in out, out
        assert f"sent SIGUSR1 to {(run_dir / f'{name}.started').read_text()} on" in out, out


def test_array_percent_one_runs_one_task_at_a_time(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str
) -> None:
    job = submit(cli, "stamp.py", "--args", f"{run_dir}/stamps", "--array", "1-3%1",
                 "--job-name", job_name, "--time", "5", "--signal", "B:USR1@60")  # fmt: skip
    wait_for(
        lambda: any(j.reason == "JobArrayTaskLimit" for j in slurm.squeue(names=[job_name])),
        timeout=30,
        what="pending tasks held by the %1 limit",
    )
    wait_for(lambda: not active(slurm, job_name), timeout=90, what="the array to end")
    events = [line.split() for line in (run_dir / "stamps").read_text().splitlines()]
    assert [e[:2] for e in events] == [
        ["1", "start"], ["1", "end"], ["2", "start"], ["2", "end"], ["3", "start"], ["3", "end"]
    ]  # fmt: skip
    times = [float(e[2]) for e in events]
    assert times == sorted(times)
    assert (run_dir / f"{job_name}-{job}_3.out").exists()


def test_after_and_after_name_wait_for_the_first_job(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str
) -> None:
    first = submit(cli, "sleep.py", "--job-name", job_name, "--time", "5", "--signal", "USR1@60")
    ids = [first]
    try:
        ids.append(submit(cli, "marker.py", "--job-name", job_name + "-b", "--after", first))
        ids.append(submit(cli, "marker.py", "--job-name", job_name + "-c",
                          "--after-name", job_name))  # fmt: skip
        for job in ids[1:]:
            wait_for(
                lambda job=job: slurm.squeue(job_ids=[job])[0].reason == "Dependency",
                timeout=20,
                what=f"job {job} pending on (Dependency)",
            )
            assert record(slurm, job)["Dependency"].startswith(f"afterany:{first}")
        res = cli("submit", "marker.py", "--after-name", "no-such-job-" + job_name)
        assert res.code == 1 and "no running or pending job" in res.err
    finally:
        slurm.scancel(ids)


def test_kill_switch_burns_through_the_array(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str
) -> None:
    job = submit(cli, "marker.py", "--args", f"{run_dir}/ran", "--array", "1-5%1", "--job-name",
                 job_name, "--time", "5", "--signal", "B:USR1@60", "--", "--hold")  # fmt: skip
    res = cli("stop", "--job-name", job_name)  # the recorded kill switch of this submission
    assert res.code == 0 and str(run_dir / f"kill-switch.{job_name}") in res.out
    slurm.release(job)
    start = time.monotonic()
    wait_for(lambda: not active(slurm, job_name), timeout=90, what="the array to end")
    assert time.monotonic() - start < 60
    assert not (run_dir / "ran").exists(), "python started despite the kill switch"
    for task in range(1, 6):
        assert "kill switch" in (run_dir / f"{job_name}-{job}_{task}.out").read_text()
    for rec in slurm.show_job(job):
        assert rec["JobState"] == "COMPLETED" and rec["RunTime"] in ("00:00:00", "00:00:01")


def test_stop_cancel_pending_and_a_hostile_job_name(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str
) -> None:
    submit(cli, "marker.py", "--array", "1-4%1", "--job-name", job_name, "--", "--hold")
    res = cli("stop", "--job-name", job_name, "--cancel-pending")
    assert res.code == 0, res.err
    wait_for(lambda: not active(slurm, job_name), timeout=20, what="pending tasks gone")
    (run_dir / f"kill-switch.{job_name}").unlink()

    # no spaces (a run's job name may not have them): $IFS splits words for a shell instead
    name = f"x';touch${{IFS}}{run_dir}/PWNED;#{job_name}"
    job = submit(
        cli,
        "marker.py",
        "--args",
        f"{run_dir}/ran",
        "--job-name",
        name,
        "--time",
        "5",
        "--signal",
        "B:USR1@60",
    )
    try:
        wait_final(slurm, [job], timeout=60)
        rec = record(slurm, job)
        assert rec["JobState"] == "COMPLETED" and (run_dir / "ran").read_text() == "ran\n"
        assert rec["JobName"] == name
        assert not (run_dir / "PWNED").exists()
        assert (run_dir / f"slurm-{job}.out").exists()  # a name with a / cannot name the log
    finally:
        slurm.scancel([job])


def test_a_users_batch_script_runs_wrapped(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str
) -> None:
    (run_dir / "job.slurm").write_text(
        "#!/bin/bash\n#SBATCH --time=7\n#SBATCH -J someone-else\n\nset -e\n"
        f'srun {sys.executable} marker.py "{run_dir}/wrapped"\n'
        'echo "kill switch seen by the body: $RTOOL_KILL_SWITCH"\nexit 3\n'
    )
    job = submit(cli, "job.slurm", "--job-name", job_name, "--signal", "B:USR1@60")
    wait_final(slurm, [job], timeout=60)
    rec = record(slurm, job)
    assert (rec["JobName"], rec["TimeLimit"], rec["ExitCode"]) == (job_name, "00:07:00", "3:0")
    assert (run_dir / "wrapped").read_text() == "ran\n"
    out = (run_dir / f"{job_name}-{job}.out").read_text()
    assert f"kill switch seen by the body: {run_dir}/kill-switch.{job_name}" in out


LOG_AND_REQUEUE = """\
import os, subprocess, sys, time
restart = os.environ.get("SLURM_RESTART_COUNT", "0")
print(f"attempt restart={restart}: Traceback (most recent call last): the crash", flush=True)
if restart == "0":  # as a requeue away from a bad node does
    subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]], check=True)
    time.sleep(120)
"""


def test_a_runs_log_survives_a_requeue(
    cli: Cli, slurm: Slurm, run_dir: Path, job_name: str
) -> None:
    """Issue 35.7: the job's .out is appended to by every submission, not only with
    --auto-requeue: the first attempt's traceback is still there after the requeue."""
    (run_dir / "log_and_requeue.py").write_text(LOG_AND_REQUEUE)
    res = cli("submit", "log_and_requeue.py", "--job-name", job_name, "--time", "5", "--dry-run")
    assert "#SBATCH --open-mode=append" in res.out
    job = submit(cli, "log_and_requeue.py", "--job-name", job_name, "--time", "5")
    wait_for(
        lambda: (
            record(slurm, job).get("Restarts") == "1"
            and record(slurm, job).get("JobState") in FINAL
        ),
        timeout=150,
        interval=1,
        what=f"job {job} requeued once and ended",
    )
    out = (run_dir / f"{job_name}-{job}.out").read_text()
    assert "attempt restart=0: Traceback (most recent call last): the crash" in out, out
    assert "attempt restart=1: Traceback (most recent call last): the crash" in out, out
