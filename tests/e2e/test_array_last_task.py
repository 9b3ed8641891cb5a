"""The last task of an array trains on to its deadline after the warning signal (issue #38).

Slurm gives the array's own job id to its last task, and `scontrol show job <that id>` lists
every task of the array: the shim must read the EndTime of its own task (`<array>_<task>`),
not of another, finished one (it read "SIGUSR1 (-18s left): stopping now" and stopped at once).
An array of 2 one-minute tasks with `--signal B:USR1@40`: on 22.05 the signal comes 0-20 s into
a task (the periodic check, every 30 s); a task that trains on stops ~10 s before its limit, one
that stops at once trains for at most ~20 s. Single node (the toy) and 2 nodes (torchrun, DDP).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from tests.e2e.conftest import TOY, RtoolRun, steps_of
from tests.e2e.test_multinode import DDP, _free_port, read
from tests.helpers import wait_for

TRAINS_ON = "training on until"
STOPS_NOW = "stopping now"
#: Seconds of training a task must reach after the signal's earliest arrival (a task stopped at
#: the signal trains <= ~20 s; one that trains on to its deadline ~45 s).
MIN_TRAINED_S = 32


def _config(tmp_path: Path) -> None:
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')


def _outputs(folder: Path, job: str, job_name: str) -> dict[str, str]:
    """The task's `.out` text by array task id (`%x-%A_%a.out`)."""
    got = {}
    for path in folder.glob(f"{job_name}-{job}_*.out"):
        got[path.stem.rsplit("_", 1)[1]] = path.read_text(errors="replace")
    return got


def _both_tasks_trained_on(outputs: dict[str, str]) -> None:
    assert sorted(outputs) == ["1", "2"], sorted(outputs)
    for task, text in outputs.items():
        assert TRAINS_ON in text and STOPS_NOW not in text, f"task {task}:\n{text[-3000:]}"


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_the_last_task_of_an_array_trains_on_to_its_deadline(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    _config(tmp_path)
    run = tmp_path / "run"
    toy_args = ["--steps", "5000", "--step-seconds", "0.1", "--dir", str(run)]
    job = rtool(
        *("submit", str(TOY), "--job-name", job_name, "--array", "1-2%1"),
        *("--time", "0:01:00", "--signal", "B:USR1@40", "--exit-before-end", "off"),
        *("--python", sys.executable, "--args", shlex.join(toy_args), "--parsable"),
    ).stdout.strip()
    wait_for(lambda: not slurm.squeue(names=[job_name], states="PENDING,RUNNING"), 240, 1, "end")

    _both_tasks_trained_on(_outputs(tmp_path, job, job_name))
    lines = steps_of(run)
    assert {s.job for s in lines if s.task == "2"} == {job}  # the last task has the array's id
    by_task: dict[str, int] = {}
    for line in lines:
        by_task[line.task] = by_task.get(line.task, 0) + 1
    # 0.1 s steps: >= 25 s of training in each task (at most ~20 s when stopped at the signal)
    assert sorted(by_task) == ["1", "2"] and min(by_task.values()) >= 250, by_task


@pytest.mark.slurm
@pytest.mark.timeout(360)
def test_the_last_task_of_a_two_node_array_trains_on_to_its_deadline(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    _config(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    script = Path(sys.executable).with_name("torchrun")  # a venv without it: the module
    torchrun = script if script.exists() else f"{sys.executable} -m torch.distributed.run"
    launcher = (
        f"{torchrun} --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d "
        f"--rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {job_name}"
    )
    env = {"DDP_DIR": str(run), "DDP_STEPS": "5000", "DDP_STEP_SECONDS": "0.1",
           "DDP_CKPT_EVERY": "50", "OMP_NUM_THREADS": "1"}  # fmt: skip
    job = rtool(
        *("submit", str(DDP), "--job-name", job_name, "--nodes", "2", "--launcher", launcher),
        *("--array", "1-2%1", "--time", "0:01:00", "--signal", "B:USR1@40"),
        *("--exit-before-end", "off", "--parsable"),
        env=env,
    ).stdout.strip()
    wait_for(lambda: not slurm.squeue(names=[job_name], states="PENDING,RUNNING"), 300, 1, "end")

    _both_tasks_trained_on(_outputs(run.parent, job, job_name))
    for rank in (0, 1):
        lines = read(run / f"steps-{rank}.log")
        for task in ("1", "2"):
            times = [ln.t for ln in lines if ln.attempt[0] == task]
            assert times and times[-1] - times[0] >= MIN_TRAINED_S - 10, (rank, task, len(times))
