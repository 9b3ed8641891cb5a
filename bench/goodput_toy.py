#!/usr/bin/env python3
"""The toy training of bench/goodput.py, in two setups.

    goodput_toy.py --dir D --steps N --step-seconds S [--plain --every K]

Each step sleeps S seconds and appends `step=N t=<time> pid=<pid> job=<SLURM_JOB_ID>` to
D/steps.log. It resumes from D/checkpoint.json, saved every K steps (--every) in both setups.
Faults on demand: D/hang (the file is removed, the process hangs), D/crash (removed, the
process raises). With --plain: no signal handling (the setup people use without rtool);
otherwise the rtool shim too (Guard: saves at the time limit, on the signal or a requeue, told of
every periodic save and its duration; finished() cancels the rest of the array).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _take(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--step-seconds", type=float, required=True)
    p.add_argument("--plain", action="store_true")
    p.add_argument("--every", type=int, default=100)
    a = p.parse_args()
    d = Path(a.dir)
    ckpt = d / "checkpoint.json"
    try:
        step0 = int(json.loads(ckpt.read_text())["step"]) + 1
    except (OSError, ValueError, KeyError):
        step0 = 0

    def save(step: int) -> None:
        tmp = d / f".ckpt.{os.getpid()}"
        tmp.write_text(json.dumps({"step": step}))
        os.replace(tmp, ckpt)

    guard = None
    if not a.plain:
        from rtool.shim import Guard

        guard = Guard.from_env(save=save)
        guard.exit_if_killed()
    job = os.environ.get("SLURM_JOB_ID", "-")
    print(f"starting at step {step0}", flush=True)
    with (d / "steps.log").open("a", buffering=1) as log:
        for step in range(step0, a.steps):
            if _take(d / "hang"):
                print(f"hanging at step {step}", flush=True)
                while True:
                    time.sleep(3600)
            if _take(d / "crash"):
                raise RuntimeError(f"injected crash at step {step}")
            time.sleep(a.step_seconds)
            log.write(f"step={step} t={time.time():.3f} pid={os.getpid()} job={job}\n")
            if (step + 1) % a.every == 0:
                t0 = time.monotonic()
                save(step)  # both setups checkpoint every K steps
                if guard is not None:  # rtool learns the save's cost (the time-limit lead)
                    guard.mark_saved(step, time.monotonic() - t0)
            if guard is not None:
                guard.step(step)
    if step0 < a.steps:
        save(a.steps - 1)
    if guard is not None:
        guard.finished()
    print("training finished", flush=True)
    (d / "finished").touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
