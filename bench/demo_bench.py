"""How fast does the demo's scenario happen on a real (local) Slurm, against baselines measured
in the same run:

- the kill-switch burn-through (the array's queued tasks exiting at once) against an array of
  as many bare `true` tasks (`sbatch --array=0-N%1 --wrap=true`): the floor Slurm sets (the
  requeued task also exits at once, but only after its begin time, reported apart);
- the hang detection latency against its bound, `stale` + one cron tick.

    python bench/demo_bench.py [--runs 2]      # ~80 s a run; uses $SLURM_CONF, else a local Slurm
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import slurm_conf
from devtools.demo.workspace import Timing
from rtool.core.slurm import Slurm

ROOT = Path(__file__).resolve().parent.parent


def bare_array(tasks: int) -> float:
    """Seconds from submitting `tasks` trivial tasks (%1) until the array is gone."""
    slurm = Slurm(timeout=30)
    name = f"bench-true-{time.time_ns()}"
    t0 = time.monotonic()
    slurm.sbatch(
        [f"--array=0-{tasks - 1}%1", f"--job-name={name}", "--wrap=true", "-o", "/dev/null"]
    )
    while slurm.squeue(names=[name], states="PENDING,RUNNING,COMPLETING"):
        time.sleep(0.1)
    return time.monotonic() - t0


def run_demo() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rtool-demo-bench-") as tmp:
        ws = Path(tmp) / "ws"
        res = subprocess.run(
            [sys.executable, "-m", "devtools.demo", "--dir", str(ws)],  # as scripts/demo
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        summary: dict[str, Any] = json.loads((ws / "summary.json").read_text())
    if res.returncode != 0:
        print(res.stdout[-3000:], file=sys.stderr)
    return summary


def _event(summary: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in summary["events"] if e["name"] == name)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args()
    t = Timing()
    rows: list[dict[str, float]] = []
    with slurm_conf():
        for _ in range(args.runs):
            s = run_demo()
            kill = _event(s, "kill-switch")["data"]
            hang = _event(s, "hang")["data"]
            tasks = kill["fresh_tasks"]
            rows.append(
                {
                    "ok": float(s["ok"]),
                    "wall": s["wall_seconds"],
                    "signal_at": _event(s, "time-limit")["at"],
                    "detect": hang["detect_seconds"],
                    "burn": kill["fresh_gone_seconds"],
                    "all_gone": kill["burn_seconds"],
                    "bare": bare_array(tasks),
                    "tasks": tasks,
                }
            )
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    bound = t.stale + t.tick
    print(f"runs: {len(rows)}, all ok: {all(r['ok'] for r in rows)}")
    print(f"demo wall time            {med['wall']:6.1f} s")
    print(f"time-limit step done at   {med['signal_at']:6.1f} s (Slurm's signal timing)")
    print(
        f"hang -> alert             {med['detect']:6.1f} s  = {med['detect'] / bound:.2f}x "
        f"(stale {t.stale}s + tick {t.tick}s)"
    )
    print(
        f"kill switch, {int(med['tasks'])} queued tasks gone {med['burn']:6.1f} s  = "
        f"{med['burn'] / med['bare']:.2f}x a bare array of as many `true` tasks "
        f"({med['bare']:.1f} s)"
    )
    print(f"  ... and the requeued task (waits its begin time) {med['all_gone']:6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
