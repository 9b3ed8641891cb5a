"""One rank of the 4-process straggler test (gloo, CPU); run by test_straggler.py.

Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, SLURMD_NODENAME, SLOW_RANK, RTOOL_HEARTBEAT.
Each step sleeps STEP seconds, the slow rank's 20 % longer; the ranks meet only in the
guard's agreement (every 10 steps).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch.distributed as dist

from rtool.shim import Guard

STEP = 0.05


def main() -> None:
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    guard = Guard.from_env(save=None, exit=False, sync_every=10, poll_interval=0.05)
    pause = STEP * (1.2 if rank == int(os.environ["SLOW_RANK"]) else 1.0)
    for step in range(100):
        time.sleep(pause)
        guard.step(step)
    guard.finished(99)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
