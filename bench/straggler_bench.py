"""What the straggler history costs (docs/guide/stragglers.md), against baselines measured in
the same run:

- per agreement of the ranks (rank 0): `StepLog.add` of the agreement's slowest rank, against
  computing that slowest rank (`Agreement.slowest`'s arithmetic on the ranks' step times);
- per heartbeat write (every `heartbeat_interval`, 5 s by default): `Heartbeat.to_json` with a
  full history (30 agreements, 64 baseline values), against the same heartbeat without it; the
  bytes written;
- per `rtool watch run` (each attempt): `straggler.judge` on a full window.

Nothing is added per step: the step times travel with the agreement the guard already makes.

    python bench/straggler_bench.py [--repeats 15] [--world 64]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.runs.model import Attempt
from rtool.runs.straggler import Limits, judge
from rtool.shim.steplog import StepLog


def per_call(fn: Callable[[], object], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def slowest(times: list[float], nodes: list[str]) -> dict[str, object]:
    rank = max(range(len(times)), key=lambda r: times[r])
    lag = times[rank] / statistics.median(times) - 1
    return {
        "slowest_rank": rank,
        "slowest_node": nodes[rank],
        "slowest_lag": lag,
        "slowest_seconds": times[rank],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--world", type=int, default=64, help="ranks in the agreement")
    a = p.parse_args()
    rng = random.Random(0)
    nodes = [f"gpu{r // 8:03d}" for r in range(a.world)]
    times = [0.5 * (1 + rng.uniform(-0.05, 0.05)) for _ in range(a.world)]
    found = slowest(times, nodes)
    log = StepLog()
    for _ in range(400):
        log.add(found)
    base = Heartbeat(RunState.RUNNING, time.time(), run="llm", job_id="88", step=1000)
    full = base.replace(**log.fields())
    att = Attempt(
        "llm",
        1,
        "88",
        nodes=tuple(sorted(set(nodes))),
        step_recent=full.step_recent,
        step_baseline=full.step_baseline,
    )
    rows: dict[str, list[float]] = {k: [] for k in ("slowest", "add", "json0", "json1", "judge")}
    for _ in range(a.repeats):
        rows["slowest"].append(per_call(lambda: slowest(times, nodes), 2000))
        rows["add"].append(per_call(lambda: log.add(found), 2000))
        rows["json0"].append(per_call(base.to_json, 500))
        rows["json1"].append(per_call(full.to_json, 500))
        rows["judge"].append(per_call(lambda: judge(att, Limits()), 500))
    med = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
    print(f"world {a.world}, median of {a.repeats} repeats (µs per call)")
    print(
        f"  agreement: slowest rank {med['slowest']:.1f}, StepLog.add {med['add']:.1f} "
        f"({med['add'] / med['slowest']:.2f}x the slowest rank's arithmetic)"
    )
    print(
        f"  heartbeat to_json: without history {med['json0']:.1f} ({len(base.to_json())} B), "
        f"with {med['json1']:.1f} ({len(full.to_json())} B): {med['json1'] / med['json0']:.2f}x"
    )
    print(f"  watch run: judge {med['judge']:.1f}")


if __name__ == "__main__":
    main()
