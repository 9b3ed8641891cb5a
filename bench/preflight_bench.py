"""What the pre-flight check costs a job: time from the job's start to the first line of the
training, with and without the pre-flight, on the local Slurm (a stand-in `nvidia-smi`).

    python bench/preflight_bench.py [--repeat 3]

Prints the median delay of each and the difference (the pre-flight's cost) and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import slurm_conf
from rtool.core.slurm import Slurm

SMI = """#!/bin/bash
case "$1" in *ecc*) for i in 0 1 2 3 4 5 6 7; do echo "$i, 0, [N/A], No, No"; done; exit 0 ;; esac
for i in 0 1 2 3 4 5 6 7; do echo "$i, 00000000:1$i:00.0, NVIDIA H100 80GB HBM3, GPU-$i"; done
"""


def delays(work: Path, preflight: bool, repeat: int) -> list[float]:
    """Seconds from each job's StartTime to its body's first line. With the pre-flight, each
    job's output must show it ran (`rtool: pre-flight OK ...`), not that it could not run."""
    slurm = Slurm(timeout=30)
    ids, names = [], {}
    for i in range(repeat):
        name = f"pf-bench-{'on' if preflight else 'off'}-{i}"
        argv = [sys.executable, "-m", "rtool", "submit", "body.slurm", "--job-name", name]
        argv += ["--time", "20:00", "--parsable"] + ([] if preflight else ["--no-preflight"])
        out = subprocess.run(argv, cwd=work, capture_output=True, text=True, check=True)
        ids.append(out.stdout.strip())
        names[ids[-1]] = name
    deadline = time.monotonic() + 180
    result = []
    for job_id in ids:
        stamp = work / f"body-{job_id}.t"
        while not stamp.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        start = slurm.show_job(job_id)[0]["StartTime"]
        began = datetime.fromisoformat(start).timestamp()
        result.append(float(stamp.read_text()) - began)
        if preflight:
            text = (work / f"{names[job_id]}-{job_id}.out").read_text(errors="replace")
            said = [line for line in text.splitlines() if line.startswith("rtool: pre-flight")]
            if not said or "could not run" in said[0]:
                raise SystemExit(f"job {job_id}: the pre-flight did not run: {said or text[-300:]}")
            print(f"  job {job_id}: {said[0]}")
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with slurm_conf(), tempfile.TemporaryDirectory(prefix="rtool-pf-bench-") as tmp:
        work = Path(tmp)
        (work / "bin").mkdir()
        (work / "bin" / "nvidia-smi").write_text(SMI)
        (work / "bin" / "nvidia-smi").chmod(0o755)
        (work / "rtool.toml").write_text("[nodes.preflight]\ngpus = 8\n")
        (work / "body.slurm").write_text("#!/bin/bash\ndate +%s.%N > body-$SLURM_JOB_ID.t\n")
        os.environ["PATH"] = f"{work / 'bin'}:{os.environ['PATH']}"
        os.environ["XDG_STATE_HOME"] = str(work / "state")
        off = statistics.median(delays(work, False, args.repeat))
        on = statistics.median(delays(work, True, args.repeat))
    print(f"job start -> training, without pre-flight: {off:.2f} s (median of {args.repeat})")
    print(f"job start -> training, with pre-flight:    {on:.2f} s")
    print(f"pre-flight cost: {on - off:.2f} s ({on / off:.1f}x the bare start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
