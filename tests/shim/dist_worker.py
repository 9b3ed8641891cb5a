"""One rank of the 2-process torch.distributed (gloo) test; run by test_distributed.py.

Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, WORKER_DIR, SYNC_EVERY.
Each rank has its own kill switch (`kill-<rank>`): only the rank whose file appears sees it.
The save switch (`save-now`) is shared. Saves go to `saves-<rank>.log`, the exit to `exit-<rank>`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from rtool.shim import Guard


def main() -> None:
    rank = int(os.environ["RANK"])
    out = Path(os.environ["WORKER_DIR"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))

    def save(step: int) -> None:
        with (out / f"saves-{rank}.log").open("a") as fh:
            fh.write(f"{step}\n")

    guard = Guard(
        save,
        kill_switch=out / f"kill-{rank}",
        save_switch=out / "save-now",
        sync_every=os.environ.get("SYNC_EVERY", "auto"),
        sync_seconds=0.2,
        poll_interval=0.05,
    )
    step = 0
    try:
        while True:
            time.sleep(0.01)
            t = torch.ones(1)
            dist.all_reduce(t)  # the training's own collective, as in DDP
            guard.step(step)
            (out / f"step-{rank}").write_text(str(step))
            step += 1
    except SystemExit as exc:
        (out / f"exit-{rank}").write_text(json.dumps({"code": exc.code, "step": step}))
        dist.destroy_process_group()
        sys.exit(exc.code)


if __name__ == "__main__":
    main()
