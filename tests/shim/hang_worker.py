"""One rank of the 4-process hang test (gloo, CPU); run by test_hang_ranks.py.

Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, SLURMD_NODENAME, RTOOL_HANG_AFTER,
RTOOL_ABORT_FILE, ODD_RANK; HANG_ONCE (a file: only the launch that creates it hangs). From
step 5 the odd rank hangs in `next_batch` (a data loader that never returns) and the others in
the step's all_reduce, waiting for it.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from rtool.shim import Guard


def next_batch(rank: int, step: int) -> torch.Tensor:
    if step >= 5 and rank == int(os.environ["ODD_RANK"]) and first_hang():
        time.sleep(3600)  # a data loader worker that never answers
    return torch.ones(1)


def first_hang() -> bool:
    once = os.environ.get("HANG_ONCE")
    if not once:
        return True
    try:
        os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def main() -> None:
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    guard = Guard.from_env(save=None, sync_every=1000, poll_interval=0.05)
    for step in range(1000):
        batch = next_batch(rank, step)
        dist.all_reduce(batch)  # the training's own collective, as in DDP
        time.sleep(0.02)
        guard.step(step)


if __name__ == "__main__":
    main()
