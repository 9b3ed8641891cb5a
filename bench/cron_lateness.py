"""Benchmark: how late do cron ticks start against their slots, over N ticks?

Runs on a fresh local Slurm (fast scheduler settings: bf_interval=1, sched_interval=2), two
chains side by side with the same period. After `--wait-after` ticks the nodes are drained for
`--wait` seconds (a queue wait, as on a busy cluster), then resumed:

- rtool cron: each tick queues the next for the next wall-clock slot (`--begin=<slot>`);
  lateness = tick start (in Python, after imports) - its slot.
- baseline: the classic self-resubmitting script (`sbatch --begin=now+PERIOD` at its start);
  lateness = start - (first start + k * PERIOD), i.e. its drift against the grid it meant to
  keep.

    python bench/cron_lateness.py [--ticks 20] [--period 3] [--wait 7] [--wait-after 5]

Prints median and max lateness of both over all ticks and over the last 5 (after the wait).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from devtools.localslurm import control
from rtool.app.plumbing.appconfig import load_config
from rtool.core.proc import run
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron import manage
from rtool.cron.store import CronStore, chain_name, resolve_dir
from rtool.cron.tick import TickEnv

BASELINE = """#!/bin/bash
date +%s.%N >> {out}
if [ "$(wc -l < {out})" -lt {ticks} ]; then
    sbatch --quiet --begin=now+{period} --job-name={name} --output=/dev/null {script}
fi
"""


def start_rtool(work: Path, period: float) -> tuple[CronStore, Slurm]:
    root = resolve_dir(work / "cron")
    manage.init(root)
    cfg_path = work / "rtool.toml"
    cfg_path.write_text(
        f'[state]\ndir = "{work / "state"}"\n[cron]\ndir = "{root}"\n'
        f'[cron.periods]\nhourly = "{period:g}s"\n[notify.log]\npath = "{work / "alerts.log"}"\n'
    )
    slurm = Slurm(timeout=30)
    env = TickEnv(load_config(cfg_path), StateDir(work / "state"), slurm, root, cfg_path)
    print(manage.start(env))
    return CronStore(env.state, root), slurm


def start_baseline(work: Path, slurm: Slurm, period: float, ticks: int) -> Path:
    out = work / "baseline.txt"
    script = work / "baseline.sh"
    q = shlex.quote
    script.write_text(
        BASELINE.format(
            out=q(str(out)),
            ticks=ticks,
            period=int(period),
            name="rtool-bench-naive",
            script=q(str(script)),
        )
    )
    script.chmod(0o755)
    slurm.sbatch(["--job-name=rtool-bench-naive", "--output=/dev/null"], script_path=str(script))
    return out


def queue_wait(slurm: Slurm, seconds: float) -> None:
    """Make every pending job wait `seconds` in the queue: drain the nodes, then resume them."""
    nodes = run(["sinfo", "-h", "-o", "%N"], timeout=30).stdout.split()[0]
    node = f"nodename={nodes}"
    slurm.scontrol("update", node, "state=drain", "reason=rtool-bench-queue-wait")
    time.sleep(seconds)
    slurm.scontrol("update", node, "state=resume")


def summary(label: str, late: list[float]) -> str:
    return (
        f"{label:<34} n={len(late):<3} median {statistics.median(late):6.2f} s   "
        f"max {max(late):6.2f} s   last {late[-1]:6.2f} s"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=20)
    ap.add_argument("--period", type=float, default=3.0)
    ap.add_argument("--wait", type=float, default=7.0, help="queue wait (node drained), s")
    ap.add_argument("--wait-after", type=int, default=5, help="ticks before the queue wait")
    args = ap.parse_args()
    if args.period != int(args.period):
        ap.error("--period must be whole seconds (sbatch --begin=now+N)")
    work = Path(tempfile.mkdtemp(prefix="rtool-bench-cron-"))
    cluster = control.up(work / "slurm")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        store, slurm = start_rtool(work, args.period)
        base_out = start_baseline(work, slurm, args.period, args.ticks)
        deadline = time.monotonic() + args.ticks * args.period * 3 + args.wait + 60
        waited = args.wait <= 0
        while time.monotonic() < deadline:
            if not waited and len(store.read_ticks()) >= args.wait_after:
                queue_wait(slurm, args.wait)
                waited = True
            n_base = len(base_out.read_text().split()) if base_out.exists() else 0
            if len(store.read_ticks()) >= args.ticks and n_base >= args.ticks:
                break
            time.sleep(1)
        slurm.scancel(name=chain_name(store.root))
        slurm.scancel(name="rtool-bench-naive")
    finally:
        control.down(cluster.dir)
    ticks = store.read_ticks()[: args.ticks]
    ours = [float(t["lateness"]) for t in ticks]
    starts = [float(x) for x in base_out.read_text().split()][: args.ticks]
    naive = [s - (starts[0] + k * args.period) for k, s in enumerate(starts)]
    if len(ours) < 2 or len(naive) < 2:
        print(f"not enough ticks: rtool {len(ours)}, baseline {len(naive)}")
        return 1
    wait = f"one {args.wait:g}s queue wait after tick {args.wait_after}" if args.wait else "no wait"
    print(f"cron tick lateness, {args.ticks} ticks, period {args.period:g}s, local Slurm, {wait}")
    print(summary("rtool cron (wall-clock slots)", ours))
    print(summary("baseline (sbatch --begin=now+P)", naive))
    print(summary("rtool, last 5 ticks", ours[-5:]))
    print(summary("baseline, last 5 ticks", naive[-5:]))
    ratio = statistics.median(naive[-5:]) / max(statistics.median(ours[-5:]), 1e-3)
    print(f"baseline/rtool median lateness over the last 5 ticks: {ratio:.1f}x")
    gaps = [ticks[i + 1]["slot"] - ticks[i]["slot"] for i in range(len(ticks) - 1)]
    skipped = sum(1 for g in gaps if g > args.period)
    print(f"rtool slots skipped (missed during the wait, run once): {skipped} of {len(gaps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
