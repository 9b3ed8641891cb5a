"""A toy training in one torch.distributed world (gloo, CPU), guarded by rtool.shim; started by
test_launchers.py under torchrun, accelerate launch or srun on several nodes. It reads only the
usual variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT) through init_process_group.

Env: TOY_DIR (shared by every node). Each process appends JSON lines to TOY_DIR/events.log:
`up` after its first all-reduce (rank, world, local rank, node, SLURM_NODEID, pid), `signal`
when its own USR1 handler runs, `saved` from every rank at a save, `wrote` from the one process
that writes the checkpoint (rank 0).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from rtool.shim import Guard

OUT = Path(os.environ["TOY_DIR"])


def log(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, "t": time.time(), **fields}) + "\n"
    fd = os.open(OUT / "events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())  # one write per line: lines of several processes never mix
    finally:
        os.close(fd)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    me = {"rank": rank, "node": os.environ.get("SLURMD_NODENAME"), "pid": os.getpid()}
    total = torch.ones(1)
    dist.all_reduce(total)  # the world works: every rank adds its 1
    log(
        "up",
        world=world,
        summed=int(total.item()),
        local_rank=int(os.environ.get("LOCAL_RANK", "-1")),
        node_id=int(os.environ.get("SLURM_NODEID", "-1")),
        **me,
    )

    def save(step: int) -> None:
        if rank == 0:
            tmp = OUT / "ckpt.json.tmp"
            tmp.write_text(json.dumps({"step": step}))
            os.replace(tmp, OUT / "ckpt.json")
            log("wrote", step=step, **me)
        log("saved", step=step, **me)

    guard = Guard.from_env(save=save)
    shim_handler = signal.getsignal(signal.SIGUSR1)

    def on_usr1(signum: int, frame: object) -> None:
        log("signal", **me)
        if callable(shim_handler):
            shim_handler(signum, frame)

    signal.signal(signal.SIGUSR1, on_usr1)
    guard.exit_if_killed()
    for step in range(100_000):
        dist.all_reduce(torch.ones(1))
        time.sleep(0.05)
        guard.step(step)
    guard.finished()


if __name__ == "__main__":
    main()
