"""A training for the flight recorder's Slurm test (test_flight_slurm.py): it prints the
variables the batch script gave it, writes a dump per rank 0-3 with the prefix it was given
(there is no NCCL on CPU: these stand for the dumps torch writes on a collective's timeout),
then hangs at step 3 so that the shim ends it (hang_after)."""

from __future__ import annotations

import os
import time

from rtool.shim import Guard

NAMES = ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT")


def main() -> None:
    for name in (*NAMES, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"):
        print(f"flight-worker {name}={os.environ.get(name, '')}", flush=True)
    prefix = os.environ["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"]
    for rank in range(4):
        with open(f"{prefix}{rank}", "wb") as f:
            f.write(b"\x80\x04 a stand-in for torch's pickle" * (rank + 1))
    guard = Guard.from_env(save=None, poll_interval=0.05)
    for step in range(1000):
        if step == 3:
            time.sleep(3600)  # a collective that never completes
        time.sleep(0.02)
        guard.step(step)


if __name__ == "__main__":
    main()
