"""Benchmark: what scoping to your own jobs costs (issue 25).

    python bench/owner_check.py [--repeat 15] [--their-jobs 200]

Measures, in the same run, on one pending job of yours:
  baseline  bare `scontrol hold ID` + `scontrol release ID` (no owner check)
  rtool     Slurm.hold + Slurm.release (each first asks `scontrol show job ID` whose job it is)
and, when run as root, with `--their-jobs` pending jobs of a second user
(devtools.localslurm.users):
  squeue    Slurm.squeue for your name, every user's jobs (as before, parsed) vs `--user=<you>`
Prints medians and ratios. Uses $SLURM_CONF when set, else starts a local Slurm (and stops it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import median_seconds, slurm_conf  # noqa: E402
from devtools.localslurm import users  # noqa: E402
from rtool.core.proc import run  # noqa: E402
from rtool.core.slurm import Slurm  # noqa: E402

NAME = "rtool-bench-owner"
SLEEP = "#!/bin/bash\nsleep 600\n"


def actions(slurm: Slurm, job: str, repeat: int) -> None:
    def bare() -> None:
        for verb in ("hold", "release"):
            run(["scontrol", verb, job], timeout=30)

    def scoped() -> None:
        slurm.hold(job)
        slurm.release(job)

    base, ours = median_seconds(bare, repeat), median_seconds(scoped, repeat)
    print(f"hold+release  baseline {base * 1000:7.1f} ms   rtool {ours * 1000:7.1f} ms   "
          f"ratio {ours / base:.2f} (one scontrol show job per action)")  # fmt: skip


def squeue(slurm: Slurm, their_jobs: int, repeat: int) -> None:
    peer = users.ensure_user()
    conf = os.environ["SLURM_CONF"]
    if peer.run(["test", "-r", conf], check=False).returncode != 0:
        print(f"squeue: skipped ({peer.name} cannot read {conf})")
        return
    folder = peer.folder("bench-")
    try:
        for _ in range(their_jobs):
            argv = ["sbatch", "--parsable", f"--job-name={NAME}", "--begin=now+3600",
                    "--output=/dev/null"]  # fmt: skip
            peer.run(argv, cwd=folder, input=SLEEP)
        base = median_seconds(lambda: slurm.squeue(names=[NAME], all_users=True), repeat)
        ours = median_seconds(lambda: slurm.squeue(names=[NAME]), repeat)
        print(f"squeue --name with {their_jobs} jobs of another user: unfiltered "
              f"{base * 1000:7.1f} ms   --user=<you> {ours * 1000:7.1f} ms   "
              f"ratio {ours / base:.2f}")  # fmt: skip
    finally:
        peer.run(["scancel", f"--name={NAME}"], check=False)
        peer.remove(folder)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--their-jobs", type=int, default=200)
    args = p.parse_args()
    with slurm_conf():
        conf = Path(os.environ["SLURM_CONF"])
        if os.geteuid() == 0 and conf.parent.name.startswith("rtool-bench-slurm-"):
            os.chmod(conf.parent, 0o711)  # our own temp cluster: the peer reads slurm.conf
        slurm = Slurm(timeout=60)
        job = slurm.sbatch([f"--job-name={NAME}", "--begin=now+3600", "--output=/dev/null"],
                           script=SLEEP).job_id  # fmt: skip
        try:
            actions(slurm, job, args.repeat)
            if os.geteuid() == 0 and args.their_jobs > 0:
                squeue(slurm, args.their_jobs, args.repeat)
        finally:
            slurm.scancel(name=NAME)
    return 0


if __name__ == "__main__":
    sys.exit(main())
