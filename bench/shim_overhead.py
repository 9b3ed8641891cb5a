"""Per-step cost of rtool.shim's guard.step(), against baselines measured in the same run.

- empty: `for i in range(n): pass`
- naive: the loop people write by hand: two `os.path.exists` (kill and save switch) and
  `psutil.virtual_memory()` at every step
- guard: `guard.step(i)` with everything armed (one GuardOptions record): kill and save
  switches, USR1 (deadline) / TERM (unresponsive watch) handlers, time limit (auto margin, an
  EndTime an hour away), host memory threshold, heartbeat, while its polling thread runs every
  second in the background

    python bench/shim_overhead.py [--steps 200000] [--repeats 15]

Prints ns/step (median over repeats, loop included) and the ratios. Target: guard <= 1 µs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rtool.shim import Guard, GuardOptions


def empty(n: int) -> None:
    for _ in range(n):
        pass


def make_naive(kill: str, save: str) -> Callable[[int], None]:
    def naive(n: int) -> None:
        exists, vm = os.path.exists, psutil.virtual_memory
        for _ in range(n):
            if exists(kill) or exists(save) or vm().percent >= 95.0:
                break

    return naive


def make_guarded(guard: Guard) -> Callable[[int], None]:
    def guarded(n: int) -> None:
        step = guard.step
        for i in range(n):
            step(i)

    return guarded


def ns_per_step(loop: Callable[[int], None], n: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        loop(n)
        samples.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="guard.step() overhead")
    p.add_argument("--steps", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        kill, save = os.path.join(tmp, "kill"), os.path.join(tmp, "save")
        options = GuardOptions.parse(
            kill_switch=kill,
            save_switch=save,
            signals=("USR1", "TERM"),  # USR1 a deadline signal, TERM watched for a hang
            exit_before_end="auto",
            end_time=time.time() + 3600,
            max_memory_used="99.9%",
            heartbeat=os.path.join(tmp, "heartbeat.json"),
            unresponsive_after="auto",
            exit=False,
        )
        guard = Guard(lambda step: None, options)
        try:
            guard.step(0)  # the first step detects torch.distributed (not initialised here)
            naive_n = max(1000, args.steps // 50)  # the naive loop is ~100x slower
            results = {
                "empty loop": ns_per_step(empty, args.steps, args.repeats),
                "naive loop (2 exists + virtual_memory)": ns_per_step(
                    make_naive(kill, save), naive_n, args.repeats
                ),
                "guard.step (everything armed)": ns_per_step(
                    make_guarded(guard), args.steps, args.repeats
                ),
            }
            assert guard.stopping is None, guard.stopping
        finally:
            guard.close()
    base, naive, g = results.values()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; median of {args.repeats}")
    for name, ns in results.items():
        print(f"{name:42s} {ns:10.1f} ns/step")
    print(f"guard.step - empty loop: {g - base:.1f} ns/step (target <= 1000 ns)")
    print(f"naive / guard: {naive / g:.1f}x  guard / empty: {g / base:.1f}x")
    return 0 if g <= 1000 else 1


if __name__ == "__main__":
    sys.exit(main())
