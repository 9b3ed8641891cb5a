"""Slurm-aware quieting: what one drained node under N runs sends, and what the fold costs.

Each of N runs on the node is watched by the job, log and run watchdogs, all three bad (the
node drained, the training hung). With the fold: the node's alert and nothing else. Without
(the same alerts naming no cause, as before the fold existed): one alert per run and watchdog.
Then the time of a steady notify poll of that batch (its first alerts delivered, nothing new
to send), with the fold vs. the same batch without causes, measured in turn in the same run
(the log channel: no network).

    python bench/quieting_bench.py [--runs 1,10,100] [--repeat 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median_seconds
from rtool.core.alert import Alert, Cause, Status
from rtool.core.state import StateDir
from rtool.notify.config import NotifyConfig
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox

N3 = Cause.node("n3")


def batch(runs: int, fold: bool) -> list[Alert]:
    deps = (N3,) if fold else ()
    out = []
    for i in range(runs):
        out += [
            Alert(f"job:run-{i}", Status.WARNING, f"run-{i} running on n3 drained", depends=deps),
            Alert(f"log:/r/{i}/hb.json", Status.CRITICAL, "heartbeat stale", depends=deps),
            Alert(f"run:run-{i}", Status.CRITICAL, f"run-{i} stalled", depends=deps),
        ]
    if fold:
        out.append(Alert("node:n3", Status.CRITICAL, f"n3 drained: {3 * runs} alerts follow"))
    return out


def sent(runs: int, fold: bool) -> int:
    state = StateDir(tempfile.mkdtemp(prefix="qb-"))
    cfg = NotifyConfig.model_validate({"log": {"path": str(state.path / "log")}})
    report = process(batch(runs, fold), cfg, state, send=False)
    return sum(1 for d in report.decisions if d.kind)


def poll_ratio(runs: int, repeat: int) -> tuple[float, float, float]:
    """(fold s, no-fold s, ratio): a steady poll of the batch, in turn."""

    def timed(fold: bool) -> float:
        state = StateDir(tempfile.mkdtemp(prefix="qb-"))
        cfg = NotifyConfig.model_validate({"log": {"path": str(state.path / "log")}})
        alerts = batch(runs, fold)
        process(alerts, cfg, state, send=False)
        while Outbox(state).counts():  # deliver the first alerts: the polls send nothing
            flush(cfg, state)
        return median_seconds(lambda: process(alerts, cfg, state, send=False), 1)

    pairs = [(timed(True), timed(False)) for _ in range(repeat)]
    ratio = statistics.median(f / b for f, b in pairs)
    return statistics.median(f for f, _ in pairs), statistics.median(b for _, b in pairs), ratio


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="1,10,100")
    p.add_argument("--repeat", type=int, default=9)
    args = p.parse_args()
    print("runs on n3 | notifications: fold / no fold | poll: fold / no fold (ratio)")
    for runs in (int(x) for x in args.runs.split(",")):
        f, b, ratio = poll_ratio(runs, args.repeat)
        print(
            f"{runs:>10} | {sent(runs, True):>13} / {sent(runs, False):<7} | "
            f"{f * 1e3:.1f} ms / {b * 1e3:.1f} ms ({ratio:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
