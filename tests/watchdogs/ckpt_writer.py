"""A training that saves a checkpoint folder every few steps, guarded by rtool.shim (its
heartbeat gives the pace). For the checkpoint watchdog's tests, on the local Slurm or alone.

    CKW_DIR=ckpt CKW_SAVE_EVERY=5 python ckpt_writer.py

Each save writes `step_000005/` with `model.bin` (CKW_SIZE bytes), `optimizer.bin` (half of
that) and then the marker `COMPLETE`. Faults (environment variables):
CKW_STOP_SAVING_AT=K  from step K on it trains on but saves nothing (a broken save hook);
CKW_PARTIAL_AT=K      the save of step K writes model.bin, then the process dies (kill -9 in
                      the middle of a save: a node lost, the OOM killer);
a full disk needs no variable: a save that fails (ENOSPC) is reported and training goes on.
Steps: CKW_STEPS (default 1000), CKW_STEP_SECONDS (0.1). The heartbeat is $RTOOL_HEARTBEAT.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rtool.shim import Guard


def _int(name: str, default: int | None = None) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else default


def save(folder: Path, step: int, size: int, partial: bool) -> None:
    where = folder / f"step_{step:06d}"
    where.mkdir(parents=True, exist_ok=True)
    with open(where / "model.bin", "wb") as fh:
        fh.write(os.urandom(size))
        fh.flush()
        os.fsync(fh.fileno())
    if partial:
        print(f"dying in the middle of the save of step {step}", flush=True)
        os._exit(137)
    with open(where / "optimizer.bin", "wb") as fh:
        fh.write(os.urandom(size // 2))
    (where / "COMPLETE").touch()
    print(f"saved step {step}", flush=True)


def main() -> int:
    folder = Path(os.environ.get("CKW_DIR", "ckpt"))
    every = _int("CKW_SAVE_EVERY", 5) or 5
    size = _int("CKW_SIZE", 64 * 1024) or 1
    stop_saving = _int("CKW_STOP_SAVING_AT")
    partial_at = _int("CKW_PARTIAL_AT")
    steps = _int("CKW_STEPS", 1000) or 0
    pause = float(os.environ.get("CKW_STEP_SECONDS", "0.1"))
    guard = Guard.from_env(save=lambda step: save(folder, step, size, partial=False))
    for step in range(1, steps + 1):
        time.sleep(pause)
        guard.step(step)
        due = step % every == 0 and (stop_saving is None or step < stop_saving)
        if due:
            try:
                save(folder, step, size, partial=step == partial_at)
            except OSError as exc:  # a full disk: the training goes on
                print(f"save of step {step} failed: {exc}", flush=True)
    guard.finished()
    return 0


if __name__ == "__main__":
    sys.exit(main())
