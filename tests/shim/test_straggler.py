"""Straggler detection in the shim: each rank's step time travels with the ranks' periodic
agreement (no collective of its own); rank 0's heartbeat names the slowest rank, its node and
its lag. A real 4-process torch.distributed run (gloo, CPU), ranks on "nodes" n1 and n2."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from rtool.core.heartbeat import read_heartbeat
from tests.shim.conftest import ROOT, toy_env

WORKER = Path(__file__).with_name("straggler_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(tmp: Path, slow: int) -> tuple[list[int], str]:
    port, procs = str(_free_port()), []
    for rank in range(4):
        env = toy_env(
            tmp,
            RANK=str(rank),
            WORLD_SIZE="4",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
            SLURMD_NODENAME="n1" if rank < 2 else "n2",
            SLOW_RANK=str(slow),
            RTOOL_HEARTBEAT=str(tmp / "hb.json"),
            PYTHONPATH=str(ROOT),
        )
        log = (tmp / f"out-{rank}.log").open("wb")
        procs.append(
            subprocess.Popen([sys.executable, str(WORKER)], env=env, stdout=log, stderr=log)
        )
    try:
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return codes, "\n".join((tmp / f"out-{r}.log").read_text()[-2000:] for r in range(4))


def test_rank_0s_heartbeat_names_the_slow_rank_its_node_and_its_lag(tmp_path: Path) -> None:
    codes, logs = _run(tmp_path, slow=2)
    assert codes == [0] * 4, logs
    hb = read_heartbeat(tmp_path / "hb.json")
    assert hb is not None and hb.state.value == "finished", logs
    assert (hb.slowest_rank, hb.slowest_node) == (2, "n2"), hb
    assert hb.slowest_lag is not None and 0.1 < hb.slowest_lag < 0.4, hb.slowest_lag
