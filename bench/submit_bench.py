"""rtool submit overhead, as ratios against baselines measured in the same run.

1. Rendering a training script (`render_job`, jinja2 with the quoting guard; the template is
   compiled once per process) vs. the least any safe renderer must do: `shlex.quote` of the
   same values joined into a string.
2. The signal trap's process scan (`_rtool_signal_local`: every /proc entry's status, the
   environ of those that handle the signal) with N extra processes of the user running, vs.
   `ps -eo pid,comm` listing the same processes.

    python bench/submit_bench.py [--renders 200] [--procs 200] [--scans 5]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import time
from pathlib import Path

from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.specs import validate_signal
from rtool.slurm_templates.training import TrainingJob


def job() -> TrainingJob:
    return TrainingJob(
        job_name="llama-7b",
        script="/runs/train.py",
        kill_switch="/runs/kill-switch",
        save_switch="/runs/save-switch",
        array="1-10%1",
        time="20:00:00",
        signal=validate_signal("B:USR1@600"),
        launcher=["torchrun", "--nproc-per-node", "8"],
        script_args=["--lr", "3e-4"],
    )


def bench_render(n: int) -> tuple[float, float]:
    j = job()
    render_job(j)  # compile once
    t0 = time.perf_counter()
    for _ in range(n):
        render_job(j)
    ours = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        values = [j.job_name, j.kill_switch, j.save_switch, *j.launcher, j.script, *j.script_args]
        " ".join(shlex.quote(str(v)) for v in values)
    base = (time.perf_counter() - t0) / n
    return ours, base


def prelude_functions() -> str:
    text = render_job(job())
    start = text.index("_rtool_signal_local() {")
    return text[start : text.index("\n}\n", start) + 3]


def bench_scan(procs: int, scans: int) -> tuple[float, float]:
    sleepers = [subprocess.Popen(["sleep", "300"]) for _ in range(procs)]
    try:
        script = prelude_functions() + (
            f"for i in $(seq {scans}); do _rtool_signal_local USR1 999999 $$ 2>/dev/null; done"
        )
        t0 = time.perf_counter()
        subprocess.run(["bash", "-c", script], check=True, timeout=300)
        ours = (time.perf_counter() - t0) / scans
        t0 = time.perf_counter()
        for _ in range(scans):
            subprocess.run(["ps", "-eo", "pid,comm"], capture_output=True, check=True, timeout=60)
        base = (time.perf_counter() - t0) / scans
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
    return ours, base


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--renders", type=int, default=200)
    p.add_argument("--procs", type=int, default=200)
    p.add_argument("--scans", type=int, default=5)
    args = p.parse_args()
    ours, base = bench_render(args.renders)
    print(f"render training script: {ours * 1e3:.2f} ms  baseline shlex.quote join: "
          f"{base * 1e6:.1f} us  ratio {ours / base:.0f}x")  # fmt: skip
    n_proc = len(list(Path("/proc").glob("[0-9]*")))
    ours, base = bench_scan(args.procs, args.scans)
    print(f"signal trap scan ({n_proc + args.procs} processes): {ours * 1e3:.0f} ms  "
          f"baseline ps -eo pid,comm: {base * 1e3:.0f} ms  ratio {ours / base:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
