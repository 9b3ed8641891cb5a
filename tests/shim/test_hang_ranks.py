"""Hang diagnosis across ranks: a real 4-process torch.distributed run (gloo, CPU, ranks on
"nodes" n1 and n2) where one rank hangs in its data loader and the others in the collective
waiting for it; each rank writes its stacks beside the abort file and rtool groups them."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from rtool.runs.stacks import read_stacks, summary
from tests.shim.conftest import ROOT, toy_env

WORKER = Path(__file__).with_name("hang_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_rank_hung_elsewhere_is_named_with_its_node_and_frame(tmp_path: Path) -> None:
    port, abort = str(_free_port()), tmp_path / "kill-switch.abort-91"
    procs = []
    for rank in range(4):
        env = toy_env(
            tmp_path,
            RANK=str(rank),
            WORLD_SIZE="4",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
            SLURMD_NODENAME="n1" if rank < 2 else "n2",
            RTOOL_HANG_AFTER="2s",
            RTOOL_ABORT_FILE=str(abort),
            ODD_RANK="3",
            PYTHONPATH=str(ROOT),
        )
        log = (tmp_path / f"out-{rank}.log").open("wb")
        argv = [sys.executable, str(WORKER)]
        procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log))
    try:
        codes = [p.wait(timeout=90) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    logs = "\n".join((tmp_path / f"out-{r}.log").read_text()[-2000:] for r in range(4))
    assert codes == [89] * 4, logs
    stacks = read_stacks(str(abort), 0)
    assert [s.rank for s in stacks] == [0, 1, 2, 3], logs
    text = summary(stacks)
    assert text is not None
    assert text.startswith("3 ranks in all_reduce at hang_worker.py:"), text
    assert text.endswith("; rank 3 on n2 in next_batch at hang_worker.py:23"), text
    assert read_stacks(str(abort), 1) == []  # another launch's files are not this one's
