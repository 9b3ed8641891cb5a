"""Spare nodes on the real local Slurm: a 2-node DDP training (torchrun, gloo, CPU) submitted
with `--spare-nodes 1` holds 3 nodes and trains on 2; a node of the training fails (a faithful
node failure: its slurmd, slurmstepd and processes killed, the node down) and the training
restarts in place on the spare: the same job id, never requeued, resumed right after the last
checkpoint, the failed node suspect and out of the later launch."""

from __future__ import annotations

import json
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm, expand_hostlist
from rtool.runs.inplace import read_restarts
from tests.e2e.conftest import RtoolRun
from tests.e2e.test_multinode import DDP, LINE, Line, _free_port, _launches, victim_back
from tests.helpers import wait_for
from tests.shim.test_slurm import _active

__all__ = ["victim_back"]  # the fixture, used by name
STEPS, CKPT_EVERY = 200, 20


def _submit(tmp_path: Path, rtool: RtoolRun, job_name: str) -> str:
    """A 2-node DDP training with one spare node, its 200 steps well inside the time limit."""
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    run = tmp_path / "run"
    run.mkdir()
    launcher = (  # torchrun, by module: the venv may have no torchrun script
        f"{sys.executable} -m torch.distributed.run --nnodes 2 --nproc-per-node 1 "
        f"--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {job_name}"
    )
    env = {"DDP_DIR": str(run), "DDP_STEPS": str(STEPS), "DDP_STEP_SECONDS": "0.1",
           "DDP_CKPT_EVERY": str(CKPT_EVERY), "OMP_NUM_THREADS": "1"}  # fmt: skip
    return rtool(
        *("submit", str(DDP), "--job-name", job_name, "--nodes", "2", "--spare-nodes", "1"),
        *("--launcher", launcher, "--time", "0:05:00", "--requeue"),
        *("--heartbeat", str(run / "hb.json"), "--parsable"),
        cwd=tmp_path,
        env=env,
    ).stdout.strip()


@pytest.mark.slurm
@pytest.mark.timeout(360)
def test_a_failed_node_is_replaced_by_the_spare_without_the_queue(
    tmp_path: Path,
    rtool: RtoolRun,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    victim_back: list[str],
) -> None:
    run = tmp_path / "run"
    job = _submit(tmp_path, rtool, job_name)
    wait_for(lambda: len(_launches(run, 1).get("0", [])) >= 30, 150, 0.2, "30 steps")
    (record,) = slurm.show_job(job)
    held = expand_hostlist(record["NodeList"])
    assert record["NumNodes"] == "3" and len(held) == 3, record
    first = {_launches(run, r)["0"][0].node for r in (0, 1)}
    assert first == set(held[1:]), (first, held)  # the batch shell's node is the spare
    victim = held[-1]
    victim_back.append(victim)
    t_fail = time.time()
    slurm_cluster.fail_node(victim, "rtool test: node failure under a job with a spare")
    wait_for(lambda: _launches(run, 1).get("1"), 120, 0.2, "launch 1 on the spare")
    wait_for(lambda: not _active(slurm, job_name), 180, 1, "the job to end")

    (record,) = slurm.show_job(job)
    assert record["JobState"] == "COMPLETED" and record["Restarts"] == "0", record
    saves = [dict(LINE.findall(t)) for t in (run / "saves.log").read_text().splitlines()]
    before = max(int(s["saved"]) for s in saves if s["rank"] == "0" and s["launch"] == "0")
    for rank in (0, 1):
        by = _launches(run, rank)
        assert sorted(by) == ["0", "1"], sorted(by)
        assert {ln.attempt for launch in by.values() for ln in launch} == {("None", "0")}
        assert by["1"][0].step == before + 1  # from the last checkpoint
        assert sorted({ln.step for launch in by.values() for ln in launch}) == list(range(STEPS))
        texts = (run / f"steps-{rank}.log").read_text().splitlines()
        assert {dict(LINE.findall(t))["job"] for t in texts} == {job}  # one job throughout
    again = {_launches(run, r)["1"][0].node for r in (0, 1)}
    assert again == set(held[:2]) and victim not in again, again  # the spare and the survivor
    back = min(ln.t for r in (0, 1) for ln in _launches(run, r)["1"]) - t_fail
    print(f"\nnode {victim} failed; training again on {sorted(again)} {back:.1f} s later")

    out = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.out"))
    assert f"replaced by spare node(s) {held[0]}" in out, out[-3000:]
    assert f"the next launch runs on {','.join(held[:2])}" in out, out[-3000:]
    recs = read_restarts(str(run / "hb.json.restarts"))
    assert [r.launch for r in recs] == [1], recs
    suspects = json.loads(rtool("nodes", "--json", "--no-refresh").stdout)["suspects"]
    assert [s["node"] for s in suspects] == [victim], suspects


def _task_launches(run: Path, rank: int, task: str) -> dict[str, list[Line]]:
    """A rank's steps in array task `task`, by launch."""
    by = _launches(run, rank)
    return {k: got for k, v in by.items() if (got := [ln for ln in v if ln.attempt[0] == task])}


def _submit_array(tmp_path: Path, rtool: RtoolRun, job_name: str) -> str:
    """A 2-node DDP training with one spare node, an array of 2 tasks each stopped by its time
    limit (the next one resumes), the signal 40 s before it."""
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    run = tmp_path / "run"
    run.mkdir()
    launcher = (
        f"{sys.executable} -m torch.distributed.run --nnodes 2 --nproc-per-node 1 "
        f"--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {job_name}"
    )
    env = {"DDP_DIR": str(run), "DDP_STEPS": "5000", "DDP_CKPT_EVERY": str(CKPT_EVERY)}
    env |= {"DDP_STEP_SECONDS": "0.1", "OMP_NUM_THREADS": "1"}
    return rtool(
        *("submit", str(DDP), "--job-name", job_name, "--nodes", "2", "--spare-nodes", "1"),
        *("--array", "1-2%1", "--launcher", launcher, "--time", "0:02:00"),
        *("--signal", "B:USR1@40", "--heartbeat", str(run / "hb.json"), "--parsable"),
        cwd=tmp_path,
        env=env,
    ).stdout.strip()


@pytest.mark.slurm
@pytest.mark.timeout(540)
def test_the_last_task_of_an_array_restarts_on_its_spare(
    tmp_path: Path,
    rtool: RtoolRun,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    victim_back: list[str],
) -> None:
    """`--spare-nodes 1 --array 1-2%1`, each task stopped by its time limit: task 2 runs with
    the array's own job id (Slurm gives the master id to the last task, and `scontrol show job`
    of that id lists every task); a node of its launch fails and the task trains again on its
    spare, looked up as `<array>_2`: the same task, never requeued, from its last checkpoint."""
    run = tmp_path / "run"
    array = _submit_array(tmp_path, rtool, job_name)
    task2 = partial(_task_launches, run, task="2")
    wait_for(lambda: len(task2(1).get("0", [])) >= 30, 300, 0.2, "task 2: 30 steps")
    (record,) = slurm.show_job(f"{array}_2")
    held = expand_hostlist(record["NodeList"])
    assert record["JobId"] == array and len(held) == 3, record  # the last task: the array's id
    victim = held[-1]
    victim_back.append(victim)
    slurm_cluster.fail_node(victim, "rtool test: node failure under an array task with a spare")
    wait_for(lambda: task2(1).get("1"), 120, 0.2, "task 2: launch 1 on the spare")
    wait_for(lambda: not _active(slurm, job_name), 180, 1, "the array to end")

    (record,) = slurm.show_job(f"{array}_2")
    assert record["Restarts"] == "0", record
    saves = [dict(LINE.findall(t)) for t in (run / "saves.log").read_text().splitlines()]
    mine = [
        int(s["saved"]) for s in saves if (s["rank"], s["task"], s["launch"]) == ("0", "2", "0")
    ]
    for rank in (0, 1):
        by = task2(rank)
        assert sorted(by) == ["0", "1"] and by["1"][0].step == max(mine) + 1, sorted(by)
        assert {ln.attempt for launch in by.values() for ln in launch} == {("2", "0")}
    again = {task2(r)["1"][0].node for r in (0, 1)}
    assert again == set(held[:2]) and victim not in again, again  # the spare and the survivor
    out = "".join(p.read_text(errors="replace") for p in tmp_path.glob(f"*-{array}_2.out"))
    assert f"replaced by spare node(s) {held[0]}" in out, out[-3000:]
    recs = read_restarts(str(run / "hb.json.restarts"))
    assert [(r.array_task_id, r.launch) for r in recs] == [(2, 1)], recs
