"""Finding a run by name in the submission records (rtool/runs/names.py), as `rtool history` /
`watch run` / `stop` / `save` do once per call (the job watchdog reads them once per sweep, as
for an unknown name), against
the one `squeue -h` a sweep makes anyway (measured in the same run), for a growing number of
records (the state dir reads at most `names.MAX_RECORDS` of them).

    python bench/names_bench.py [--records 10,200,2000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import median_seconds, slurm_conf
from rtool.core.state import StateDir
from rtool.runs import names


def fill(state: StateDir, have: int, want: int) -> None:
    for i in range(have, want):
        sub = names.Submission(
            run=f"run-{i}",
            job_name=f"job-{i}",
            job_id=str(1000 + i),
            workdir="/scratch/me",
            kill_switch=f"/scratch/me/kill-switch.run-{i}",
            save_switch=f"/scratch/me/save-switch.run-{i}",
            heartbeat="/scratch/me/ckpt/hb.json",
            submitted=time.time(),
        )
        names.save(state, sub)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="10,200,2000")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    state = StateDir(Path(tempfile.mkdtemp(prefix="rtool-names-")) / "state")
    with slurm_conf():
        squeue = median_seconds(
            lambda: subprocess.run(["squeue", "-h"], capture_output=True, check=True), args.repeat
        )
        print(f"baseline: one squeue -h {squeue * 1000:.1f} ms")
        have = 0
        for n in (int(x) for x in args.records.split(",")):
            fill(state, have, n)
            have = n
            miss = median_seconds(partial(names.find, state, "no-such-run"), args.repeat)
            hit = median_seconds(partial(names.find, state, f"run-{n - 1}"), args.repeat)
            print(
                f"{n:>6} records: the newest run {hit * 1000:.1f} ms = {hit / squeue:.2f}x, "
                f"an unknown name {miss * 1000:.1f} ms = {miss / squeue:.2f}x one squeue"
            )


if __name__ == "__main__":
    main()
