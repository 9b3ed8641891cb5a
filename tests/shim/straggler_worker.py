"""One rank of the 4-process straggler tests (gloo, CPU): run by test_straggler.py directly, and
under torchrun on two nodes of the local cluster by test_straggler_slurm.py.

Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (or torchrun's), SLURMD_NODENAME, SLOW_RANK
(-1: none), SLOW_NODE (every rank on that node is slow), RTOOL_HEARTBEAT; STRAGGLER_STEPS
(100), STRAGGLER_STEP (0.05 s), STRAGGLER_SLOW (0.2: the slow rank's steps are that much
longer), STRAGGLER_DIR (each rank writes its node to rank-N there). Each step sleeps STEP
seconds; the ranks meet only in the guard's agreement (every 10 steps).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch.distributed as dist

from rtool.shim import Guard


def main() -> None:
    rank = int(os.environ["RANK"])
    steps = int(os.environ.get("STRAGGLER_STEPS", "100"))
    step = float(os.environ.get("STRAGGLER_STEP", "0.05"))
    slow = float(os.environ.get("STRAGGLER_SLOW", "0.2"))
    dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    if os.environ.get("STRAGGLER_DIR"):  # where each rank runs (torchrun places them)
        node = os.environ.get("SLURMD_NODENAME", "")
        with open(os.path.join(os.environ["STRAGGLER_DIR"], f"rank-{rank}"), "w") as f:
            f.write(node)
    guard = Guard.from_env(save=None, exit=False, sync_every=10, poll_interval=0.05)
    slow_here = rank == int(os.environ.get("SLOW_RANK", "-1")) or (
        os.environ.get("SLOW_NODE") == os.environ.get("SLURMD_NODENAME", "")
    )
    pause = step * (1 + slow if slow_here else 1.0)
    for i in range(steps):
        time.sleep(pause)
        guard.step(i)
    guard.finished(steps - 1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
