"""A real 2-process torch.distributed run (gloo, CPU): all ranks act at the same step."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.helpers import wait_for
from tests.shim.conftest import ROOT, toy_env

WORKER = Path(__file__).with_name("dist_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(tmp: Path, sync_every: str) -> list[subprocess.Popen[bytes]]:
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = toy_env(
            tmp,
            RANK=str(rank),
            WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
            WORKER_DIR=str(tmp),
            SYNC_EVERY=sync_every,
            PYTHONPATH=str(ROOT),
        )
        log = (tmp / f"out-{rank}.log").open("wb")
        procs.append(
            subprocess.Popen([sys.executable, str(WORKER)], env=env, stdout=log, stderr=log)
        )
    return procs


def _step(tmp: Path, rank: int) -> int:
    try:
        return int((tmp / f"step-{rank}").read_text() or -1)
    except (OSError, ValueError):
        return -1


def _saves(tmp: Path, rank: int) -> list[int]:
    path = tmp / f"saves-{rank}.log"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _finish(tmp: Path, procs: list[subprocess.Popen[bytes]]) -> list[dict[str, int]]:
    try:
        codes = [p.wait(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    logs = "\n".join((tmp / f"out-{r}.log").read_text() for r in (0, 1))
    assert codes == [0, 0], logs
    return [json.loads((tmp / f"exit-{r}").read_text()) for r in (0, 1)]


def test_save_switch_and_one_ranks_kill_switch_act_on_all_ranks(tmp_path: Path) -> None:
    procs = _start(tmp_path, "auto")
    wait_for(lambda: min(_step(tmp_path, 0), _step(tmp_path, 1)) >= 20, 60, 0.1, "both ranks")
    (tmp_path / "save-now").touch()  # shared file: both save once, at the same step
    wait_for(lambda: _saves(tmp_path, 0) and _saves(tmp_path, 1), 30, 0.05, "the agreed save")
    wait_for(lambda: not (tmp_path / "save-now").exists(), 10, 0.05, "rank 0 removes the switch")
    first = _saves(tmp_path, 0)
    assert first == _saves(tmp_path, 1) and len(first) == 1
    wait_for(lambda: _step(tmp_path, 0) > first[0] + 10, 30, 0.05, "training to go on")
    assert _saves(tmp_path, 0) == first  # the switch is not saved for twice
    (tmp_path / "kill-1").touch()  # only rank 1 sees it
    exits = _finish(tmp_path, procs)
    s0, s1 = _saves(tmp_path, 0), _saves(tmp_path, 1)
    assert s0 == s1 and len(s0) == 2, (s0, s1)
    assert exits[0] == exits[1] == {"code": 0, "step": s0[1]}


def test_a_signal_to_rank_0_only_stops_both_at_the_same_step(tmp_path: Path) -> None:
    procs = _start(tmp_path, "7")
    wait_for(lambda: min(_step(tmp_path, 0), _step(tmp_path, 1)) >= 10, 60, 0.1, "both ranks")
    os.kill(procs[0].pid, signal.SIGUSR1)
    exits = _finish(tmp_path, procs)
    s0, s1 = _saves(tmp_path, 0), _saves(tmp_path, 1)
    assert s0 == s1 and len(s0) == 1, (s0, s1)
    assert exits[0] == exits[1] == {"code": 0, "step": s0[0]}
    assert s0[0] % 7 == 0  # agreement at the first step, then every 7 steps
