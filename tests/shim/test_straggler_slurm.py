"""On the local cluster: 4 ranks on 2 nodes under torchrun (gloo, CPU), one rank 20 % slower:
`rtool watch run` names its node within a few minutes of steady training; the same run with no
slow rank gets no warning over its whole length (the soak, about 2.5 minutes: the false-alarm
figure of docs/benchmarks.md)."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from devtools.localslurm import control as localslurm
from rtool.core.heartbeat import read_heartbeat
from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

WORKER = Path(__file__).with_name("straggler_worker.py")
Cli = Callable[..., CliResult]
STEP = 0.1  # seconds; the ranks agree every 10 steps: a check a second


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _submit(
    cli: Cli,
    mp: pytest.MonkeyPatch,
    name: str,
    run: Path,
    steps: int,
    slow_rank: int,
    *extra: str,
) -> None:
    torchrun = Path(sys.executable).with_name("torchrun")
    launcher = (
        f"{torchrun} --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d "
        f"--rdzv-endpoint 127.0.0.1:{_free_port()} --rdzv-id {name}"
    )
    env = {"STRAGGLER_STEPS": str(steps), "STRAGGLER_STEP": str(STEP), "OMP_NUM_THREADS": "1"}
    for k, v in {**env, "SLOW_RANK": str(slow_rank), "STRAGGLER_DIR": str(run)}.items():
        mp.setenv(k, v)
    res = cli(
        *("submit", str(WORKER), "--job-name", name, "--nodes", "2", "--launcher", launcher),
        *("--heartbeat", str(run / "heartbeat.json"), "--time", "0:10:00", *extra),
    )
    assert res.code == 0, res.err


def _watch(cli: Cli, name: str, run: Path) -> tuple[int, str]:
    res = cli(
        *("watch", "run", name, "--heartbeat", str(run / "heartbeat.json")),
        *("--no-notify", "--json"),
    )
    got = json.loads(res.out)["results"][0] if res.out.strip() else {"summary": res.err}
    return res.code, str(got["summary"])


def _first_step(run: Path) -> float | None:
    hb = read_heartbeat(run / "heartbeat.json") if (run / "heartbeat.json").exists() else None
    return hb.first_step_time if hb is not None else None


def _cluster_ok(cluster: localslurm.Cluster) -> None:
    if len(cluster.nodes) < 2:
        pytest.fail("this test needs the multi-node local cluster")


@pytest.mark.slurm
@pytest.mark.timeout(420)
def test_watch_run_names_the_node_of_the_slow_rank(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: localslurm.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cluster_ok(slurm_cluster)
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    try:
        _submit(cli, monkeypatch, job_name, run, steps=2400, slow_rank=3)
        first = wait_for(lambda: _first_step(run), 180, 1, "the first step")
        assert isinstance(first, float)

        def named() -> tuple[int, str] | None:
            code, summary = _watch(cli, job_name, run)
            return (code, summary) if " slow: " in summary else None

        code, summary = wait_for(named, 180, 3, "watch run naming the slow node")  # type: ignore[misc]
        delay = time.time() - first
        node = (run / "rank-3").read_text()
        assert code == 1, summary  # WARNING
        assert f" slow: {node} (rank 3) slowest in " in summary, summary
        assert summary.endswith(" (attempt 1)"), summary
        print(f"\nslow node named {delay:.0f} s after the first step: {summary}")
        assert delay < 180
    finally:
        slurm.scancel(name=job_name)


@pytest.mark.slurm
@pytest.mark.timeout(420)
def test_a_run_with_no_slow_rank_gets_no_warning_over_its_length(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: localslurm.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cluster_ok(slurm_cluster)
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    hb = run / "heartbeat.json"
    try:
        _submit(cli, monkeypatch, job_name, run, steps=1500, slow_rank=-1)
        first = wait_for(lambda: _first_step(run), 180, 1, "the first step")
        assert isinstance(first, float)
        seen: list[str] = []
        judged = 0
        while True:
            code, summary = _watch(cli, job_name, run)
            seen.append(summary)
            assert code == 0 and " slow: " not in summary, seen
            now = read_heartbeat(hb)
            assert now is not None
            judged += len(now.step_recent) >= 20 and len(now.step_baseline) >= 10
            if now.state.value != "running":
                break
            time.sleep(5)
        assert now.state.value == "finished", now
        assert len(now.step_recent) == 30 and len(now.step_baseline) >= 32, now
        print(
            f"\nno slow warning in {len(seen)} watch run calls ({judged} with a window to "
            f"judge) over {now.time - first:.0f} s of training"
        )
        assert judged >= 10, seen
    finally:
        slurm.scancel(name=job_name)


@pytest.mark.slurm
@pytest.mark.timeout(420)
def test_a_node_slow_in_two_attempts_on_different_peers_becomes_a_suspect(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: localslurm.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both ranks of n2 20 % slower (a slow link): attempt 1 on n1+n2, attempt 2 on n2+n3."""
    _cluster_ok(slurm_cluster)
    if len(slurm_cluster.nodes) < 3:
        pytest.fail("this test needs the 3-node local cluster")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLOW_NODE", "n2")
    run = tmp_path / "run"
    run.mkdir()
    try:
        for attempt, exclude in ((1, "n3"), (2, "n1")):
            _submit(cli, monkeypatch, job_name, run, 450, -1, "--exclude", exclude)

            def ended(n: int = attempt) -> bool:  # its end record (squeue may lag)
                records = run / "heartbeat.json.attempts"
                text = records.read_text() if records.exists() else ""
                return text.count('"event": "end"') >= n

            wait_for(ended, 240, 2, f"attempt {attempt} to end")
        code, summary = _watch(cli, job_name, run)
        assert code == 0, summary  # the run finished
        out = cli("nodes", "--no-refresh").out
        assert out.startswith("n2  suspect since "), out
        assert "slow in attempts 1 and 2 (peers n1; n3)" in out, out
        assert "n1  suspect" not in out and "n3  suspect" not in out, out
        lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("| attempt")]
        assert len(lines) == 2 and all(" n2 (rank " in ln for ln in lines), out
        print("\n" + out)
    finally:
        slurm.scancel(name=job_name)
