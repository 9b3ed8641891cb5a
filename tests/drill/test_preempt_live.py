"""`rtool drill RUN --preempt` on the real local Slurm, on its default partition (GraceTime 0,
PreemptMode OFF: the grace is `--grace`, else KillWait): SIGTERM to every task, the grace, the
requeue; OK exactly when the toy's own steps log shows the saved step + 1 resumed, CRITICAL with
the numbers and what to change when the save outlasts the grace."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.demo.observe import parse_steps
from rtool.core.slurm import Slurm

TOY = Path(__file__).resolve().parents[2] / "examples" / "train_toy.py"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the jobs' output lands there


def submit(cli: Callable[..., Any], here: Path, job_name: str, *toy_args: str) -> str:
    (here / "rtool.toml").write_text(f'[state]\ndir = "{here / "state"}"\n')
    args = f"--steps 100000 --step-seconds 0.2 --dir {here / 'run'} {' '.join(toy_args)}"
    sub = cli(
        "--config", str(here / "rtool.toml"), "submit", str(TOY), "--job-name", job_name,
        "--auto-requeue", "--time", "20:00", "--signal", "B:USR1@60",
        "--heartbeat", str(here / "run" / "hb.json"), "--python", sys.executable,
        "--args", args, "--parsable",
    )  # fmt: skip
    assert sub.code == 0, sub.err
    return str(sub.out.strip())


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_a_preemption_drill_with_a_grace_saves_is_requeued_and_resumes_at_the_saved_step(
    tmp_path: Path, cli: Callable[..., Any], slurm: Slurm, job_name: str
) -> None:
    job = submit(cli, tmp_path, job_name)
    r = cli("--config", str(tmp_path / "rtool.toml"), "drill", job_name, "--preempt",
            "--grace", "20s", "--json")  # fmt: skip
    report = json.loads(r.out)
    assert r.code == 0 and report["status"] == "OK", r.out + r.err
    s = {x["step"]: x["text"] for x in report["steps"]}
    assert "SIGTERM sent to every task of job" in s["signal"]
    assert (
        "not the batch shell, as Slurm does when it preempts it on partition debug" in s["signal"]
    )
    assert "the 20s grace (--grace)" in s["signal"]
    assert "(signal: SIGTERM)" in s["reached"] and "of the 20s grace (--grace)" in s["lead"]
    assert "exit code 85 (requeue me)" in s["exit"]
    saved = int(s["save"].split()[2])
    log = parse_steps((tmp_path / "run" / "steps.log").read_text())
    jobs = list(dict.fromkeys(x.job for x in log))
    assert len(jobs) == 1 and job in jobs[0]  # one job, requeued in place (auto-requeue)
    pids = list(dict.fromkeys(x.pid for x in log))
    first = [x.step for x in log if x.pid == pids[0]]
    second = [x.step for x in log if x.pid == pids[1]]
    assert first[-1] == saved and second[0] == saved + 1  # the toy's own log
    assert f"started at step {saved + 1}" in s["resume"]
    assert report["summary"].startswith(f"run {job_name}: the stop path works (a preemption on")


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_a_save_longer_than_killwait_on_a_partition_without_grace_is_critical_with_numbers(
    tmp_path: Path, cli: Callable[..., Any], slurm: Slurm, job_name: str
) -> None:
    # The default partition has GraceTime 0: Slurm TERMs everything at once and KILLs it
    # KillWait (5s on the local cluster) later; a 15s save cannot make it.
    job = submit(cli, tmp_path, job_name, "--save-seconds", "15")
    r = cli("--config", str(tmp_path / "rtool.toml"), "drill", job_name, "--preempt")
    assert r.code == 2, r.out + r.err
    head = r.out.splitlines()[0]
    assert head.startswith(f"DRILL CRITICAL - run {job_name}: lead: still saving when the 5s "
                           "grace (KillWait (partition debug has GraceTime 0")  # fmt: skip
    assert "ask the admins for GraceTime=60" in head and "on partition debug" in head
    assert "rtool drill RUN --preempt --grace 60" in head
    lines = {ln.split()[0]: ln for ln in r.out.splitlines()[1:] if ln.strip()}
    assert "OK" in lines["requeue"] and "Slurm requeued job" in lines["requeue"]
    [rec] = slurm.show_job(job)
    assert rec["Restarts"] == "1"
