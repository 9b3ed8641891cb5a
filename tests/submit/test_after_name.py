"""`rtool submit --after-name NAME` on the real local Slurm: a running or pending `%1` array
(squeue lists a running task under its own job id too), a requeued job, and several runs of
the same name (then it says which and how to pick)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

Cli = Callable[..., CliResult]


def sbatch(slurm: Slurm, name: str, *args: str) -> str:
    argv = ["--job-name", name, "--output=/dev/null", "--time=5", *args, "--wrap", "sleep 300"]
    return slurm.sbatch(argv).job_id


def after(cli: Cli, name: str, tmp_path) -> CliResult:
    (tmp_path / "ft.py").write_text("print('finetune')\n")
    return cli("submit", str(tmp_path / "ft.py"), "--after-name", name, "--dry-run")


def dependency(res: CliResult) -> str:
    assert res.code == 0, res.err
    [line] = [ln for ln in res.out.splitlines() if ln.startswith("#SBATCH --dependency")]
    return line.split("=", 1)[1]


def test_after_name_of_a_running_and_a_pending_array(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path
) -> None:
    array = sbatch(slurm, job_name, "--array=1-3%1")
    wait_for(
        lambda: any(j.state == "RUNNING" for j in slurm.squeue(names=[job_name])),
        timeout=30,
        what="task 1 running",
    )
    running = [j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING"]
    assert [j.array_job_id for j in running] == [array]  # the array's id, not the task's own
    assert dependency(after(cli, job_name, tmp_path)) == f"afterany:{array}"

    held = sbatch(slurm, job_name + "-p", "--array=1-3%1", "--hold")
    assert dependency(after(cli, job_name + "-p", tmp_path)) == f"afterany:{held}"


def test_after_name_of_a_requeued_job(cli: Cli, slurm: Slurm, job_name: str, tmp_path) -> None:
    job = sbatch(slurm, job_name, "--requeue")
    wait_for(lambda: slurm.squeue(job_ids=[job])[0].state == "RUNNING", 30, what="running")
    slurm.requeue(job)
    wait_for(lambda: slurm.squeue(job_ids=[job])[0].state == "PENDING", 30, what="requeued")
    assert dependency(after(cli, job_name, tmp_path)) == f"afterany:{job}"


def test_several_runs_of_that_name_say_which_and_how_to_pick(
    cli: Cli, slurm: Slurm, job_name: str, tmp_path
) -> None:
    a = sbatch(slurm, job_name, "--array=1-2%1")
    b = sbatch(slurm, job_name, "--hold")
    wait_for(
        lambda: any(j.state == "RUNNING" for j in slurm.squeue(names=[job_name])),
        timeout=30,
        what="the array running",
    )
    res = after(cli, job_name, tmp_path)
    assert res.code == 2 and "Traceback" not in res.err
    assert f"{job_name!r} is the name of 2 runs" in res.err, res.err
    assert f"{a} (array: 1 running, 1 pending)" in res.err and f"{b} (pending)" in res.err
    assert f"--after {a}" in res.err  # how to pick one
