"""A 2-node DDP training (torchrun, gloo, CPU, one process per node) on the local 3-node cluster,
submitted with `rtool submit --nodes 2 --launcher "torchrun ..."` as an array:

- the time-limit signal reaches the ranks on both nodes, every rank saves at the same step and
  the next array task resumes at the next step;
- a node fails in the middle of an attempt: the task is requeued on the two nodes left, resumes
  from its last checkpoint, loses at most the steps since it, and the training completes;
- every step is trained exactly once, apart from the steps lost to the failure.
Prints the steps lost and the time from the failure to training again.
"""

from __future__ import annotations

import re
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm, expand_hostlist
from rtool.runs.inplace import read_restarts
from tests.e2e.conftest import RtoolRun
from tests.helpers import wait_for
from tests.shim.test_slurm import _active

DDP = Path(__file__).with_name("ddp_toy.py")
# Slurm 22.05 sends a --signal=SIG@LEAD at its periodic check (every 30 s) once the job is
# within LEAD + 30 s of its end: with --time 1 and B:USR1@40, 0-20 s into an attempt (kept
# pending by the batch script until the training's handler is in place). The shim takes USR1 as
# a deadline signal: it trains on until ~10 s before the limit, then all ranks save at the same
# step. So: the node failure (25 steps into the first attempt), then an attempt that trains until
# its deadline (700 steps of 0.1 s are 70 s of training: it cannot end inside a 1-minute limit,
# even on a quiet machine), then one that completes.
STEPS = 700
CKPT_EVERY = 20
LINE = re.compile(r"(\w+)=(\S+)")


@dataclass(frozen=True)
class Line:
    kind: str  # "step", "saved" or "signal"
    step: int
    rank: int
    node: str
    attempt: tuple[str, str]  # (array task, restart count)
    reason: str
    t: float


def read(path: Path) -> list[Line]:
    if not path.exists():
        return []
    out = []
    for text in path.read_text().splitlines():
        f = dict(LINE.findall(text))
        kind = next(iter(f), "")
        out.append(
            Line(
                kind=kind,
                step=int(f[kind]) if f.get(kind, "").isdigit() else -1,
                rank=int(f["rank"]),
                node=f["node"],
                attempt=(f["task"], f["restart"]),
                reason=f.get("reason", ""),
                t=float(f.get("t", "0")),
            )
        )
    return out


@pytest.fixture
def victim_back(slurm_cluster: control.Cluster) -> Iterator[list[str]]:
    failed: list[str] = []
    yield failed
    for name in failed:
        slurm_cluster.revive_node(name, timeout=60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _submit(rtool: RtoolRun, run: Path, job_name: str) -> str:
    torchrun = Path(sys.executable).with_name("torchrun")
    launcher = (
        f"{torchrun} --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d "
        f"--rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {job_name}"
    )
    env = {
        "DDP_DIR": str(run),
        "DDP_STEPS": str(STEPS),
        "DDP_STEP_SECONDS": "0.1",
        "DDP_CKPT_EVERY": str(CKPT_EVERY),
        "OMP_NUM_THREADS": "1",
    }
    return rtool(
        *("submit", str(DDP), "--job-name", job_name, "--nodes", "2", "--launcher", launcher),
        *("--array", "1-8%1", "--time", "0:01:00", "--signal", "B:USR1@40", "--requeue"),
        *("--exit-before-end", "off", "--parsable"),
        env=env,
    ).stdout.strip()


def _attempt_underway(run: Path) -> tuple[tuple[str, str], str] | None:
    """(attempt, a node of it) once the running attempt trained 25 steps and did not stop."""
    lines = read(run / "steps-1.log")
    if not lines:
        return None
    cur = lines[-1].attempt
    mine = [ln for ln in lines if ln.attempt == cur]
    stopped = any(s.attempt == cur and s.reason != "periodic" for s in read(run / "saves.log"))
    return (cur, mine[-1].node) if len(mine) >= 25 and not stopped else None


def _check_failure(
    run: Path, failed: tuple[str, str], victim: str, t_fail: float
) -> tuple[int, list[int]]:
    """The failed attempt's last checkpoint and the steps trained after it (lost); the attempt
    after it resumes right after the checkpoint on nodes without the failed one."""
    steps = {r: read(run / f"steps-{r}.log") for r in (0, 1)}
    saves = read(run / "saves.log")
    ckpt = max(s.step for s in saves if s.attempt == failed and s.rank == 0)
    lost = sorted({ln.step for ln in steps[0] if ln.attempt == failed and ln.step > ckpt})
    after = sorted(
        (ln for r in (0, 1) for ln in steps[r] if ln.attempt != failed and ln.t > t_fail),
        key=lambda ln: ln.t,
    )
    assert after and after[0].step == ckpt + 1
    assert victim not in {ln.node for ln in after}
    assert len(lost) <= CKPT_EVERY
    print(
        f"\nnode {victim} failed {len(lost)} step(s) after the checkpoint at step "
        f"{ckpt}: {len(lost)} step(s) lost; training again {after[0].t - t_fail:.1f} s after "
        f"the failure, on {sorted({ln.node for ln in after})}"
    )
    # Every step exactly once on every rank, the lost ones apart (they ran twice).
    for r in (0, 1):
        once = [ln.step for ln in steps[r] if not (ln.attempt == failed and ln.step > ckpt)]
        assert sorted(once) == list(range(STEPS)), f"rank {r}"
    return ckpt, lost


def _check_signal_stops(run: Path) -> None:
    """In some attempt both ranks got USR1 on their own node, both saved at the same step, and
    the next attempt started at the next step."""
    steps0, saves = read(run / "steps-0.log"), read(run / "saves.log")
    signals = read(run / "signals.log")
    stops = [s for s in saves if s.reason == "stop"]
    by_attempt = {s.attempt for s in stops}
    assert by_attempt, f"no signal stop: {saves}"
    for att in by_attempt:
        got = {(s.rank, s.node) for s in signals if s.attempt == att}
        assert {r for r, _ in got} == {0, 1} and len({n for _, n in got}) == 2, got
        at = {s.step for s in stops if s.attempt == att}
        assert len(at) == 1 and {s.rank for s in stops if s.attempt == att} == {0, 1}
        [saved] = at
        nxt = [ln for ln in steps0 if ln.step == saved + 1]
        assert nxt and nxt[0].attempt != att, f"step {saved + 1} not resumed by another attempt"


@pytest.mark.slurm
@pytest.mark.timeout(420)
def test_two_node_ddp_survives_time_limits_and_a_node_failure(
    tmp_path: Path,
    rtool: RtoolRun,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    victim_back: list[str],
) -> None:
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    run = tmp_path / "run"
    run.mkdir()
    job = _submit(rtool, run, job_name)
    failed, victim = wait_for(lambda: _attempt_underway(run), 150, 0.2, "an attempt 25 steps in")  # type: ignore[misc]
    victim_back.append(victim)
    t_fail = time.time()
    slurm_cluster.fail_node(victim, "rtool test: node failure mid-run")
    wait_for(
        lambda: not slurm.squeue(names=[job_name], states="PENDING,RUNNING,REQUEUED"),
        240,
        1,
        "the array to finish",
    )
    _check_failure(run, failed, victim, t_fail)
    _check_signal_stops(run)
    # Accounting saw it: the NODE_FAIL attempt on the failed node, then the rest on the others.
    recs = slurm.sacct(job_ids=[job])
    fails = [r for r in recs if r.state == "NODE_FAIL"]
    assert fails and victim in fails[0].nodes, recs
    assert {r.state for r in recs} >= {"NODE_FAIL", "COMPLETED"}


def _launches(run: Path, rank: int) -> dict[str, list[Line]]:
    """A rank's steps by launch (RTOOL_LAUNCH), in order."""
    path = run / f"steps-{rank}.log"
    texts = path.read_text().splitlines() if path.exists() else []
    out: dict[str, list[Line]] = {}
    for text, line in zip(texts, read(path), strict=False):
        out.setdefault(dict(LINE.findall(text)).get("launch", "0"), []).append(line)
    return out


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_two_nodes_restart_together_in_place_after_one_rank_crashes_or_hangs(
    tmp_path: Path, rtool: RtoolRun, slurm: Slurm, job_name: str
) -> None:
    """One rank crashes, later the other hangs: each time both nodes' processes end (the abort
    file, or gloo's own error) and the whole step runs again on the same two nodes, in the
    same job, from the last checkpoint."""
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    run = tmp_path / "run"
    run.mkdir()
    torchrun = Path(sys.executable).with_name("torchrun")
    launcher = (
        f"{torchrun} --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d "
        f"--rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {job_name}"
    )
    env = {"DDP_DIR": str(run), "DDP_STEPS": "160", "DDP_STEP_SECONDS": "0.05",
           "DDP_CKPT_EVERY": "20", "OMP_NUM_THREADS": "1"}  # fmt: skip
    job = rtool(
        *("submit", str(DDP), "--job-name", job_name, "--nodes", "2", "--launcher", launcher),
        *("--time", "0:05:00", "--restarts-in-place", "2", "--hang-after", "4s"),
        *("--heartbeat", str(run / "hb.json"), "--exit-before-end", "off", "--parsable"),
        env=env,
    ).stdout.strip()
    wait_for(lambda: len(_launches(run, 1).get("0", [])) >= 30, 150, 0.2, "30 steps")
    (run / "crash-1").touch()
    wait_for(lambda: len(_launches(run, 0).get("1", [])) >= 25, 120, 0.2, "launch 1 underway")
    (run / "hang-0").touch()
    wait_for(lambda: _launches(run, 1).get("2"), 120, 0.2, "launch 2 on rank 1")
    wait_for(lambda: not _active(slurm, job_name), 180, 1, "the job to end")

    (record,) = slurm.show_job(job)
    assert record["JobState"] == "COMPLETED" and record["Restarts"] == "0", record
    saves = [dict(LINE.findall(t)) for t in (run / "saves.log").read_text().splitlines()]
    for rank in (0, 1):
        by = _launches(run, rank)
        assert sorted(by) == ["0", "1", "2"], sorted(by)
        for n in ("1", "2"):  # both ranks resume after the checkpoint before the restart
            first = by[n][0]
            before = [int(s["saved"]) for s in saves if s["rank"] == "0" and s["launch"] < n]
            assert first.step == max(before) + 1, (rank, n, first.step, before)
        once = sorted({ln.step for launch in by.values() for ln in launch})
        assert once == list(range(160))
    nodes = set(expand_hostlist(record["NodeList"]))
    for n in ("0", "1", "2"):  # every launch on both nodes of the allocation, one rank each
        assert {_launches(run, r)[n][0].node for r in (0, 1)} == nodes, n
    recs = read_restarts(str(run / "hb.json.restarts"))
    assert [r.launch for r in recs] == [1, 2], recs
    # rank 0 tells: its own failure, or the other rank's (the abort file names it)
    assert recs[0].cause in ("crashed", "peer_failed") and "crashed" in recs[0].detail, recs[0]
    hung = recs[1].cause == "hung" and "no step for" in recs[1].detail  # its own hang
    told = recs[1].cause == "peer_failed" and "hung" in recs[1].detail  # the other rank's
    assert hung or told, recs[1]
    # where each rank was (their stack files beside the abort file): rank 0 in the toy's hang
    stacks = recs[1].detail.partition("; stacks: ")[2]
    assert stacks.startswith("rank 0 on ") and " in fault at ddp_toy.py:" in stacks, recs[1]
