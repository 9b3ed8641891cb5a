"""Capture what Slurm prints about reservations, for tests/core/test_reservations.py.

    RTOOL_TEST_SLURM=24.11 python -m tests.core.captured.reservation   # into captured/24.11

Starts a local 3-node cluster of the chosen release in a temp folder (as root: reservations are
made by an operator), makes a maintenance reservation on n3 now and one on every node starting
in an hour, and submits a job that needs n3 and one whose 2-hour limit runs into the later
reservation; saves `scontrol show reservation`, their squeue lines and sinfo. About 30 s.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from devtools.localslurm import control, releases
from rtool.core.slurm.nodes import SINFO_FORMAT
from rtool.core.slurm.parse import SQUEUE_FORMAT
from tests.core.captured.capture import HERE, run, sbatch


def capture(out: Path) -> None:
    run(
        *("scontrol", "create", "reservation", "ReservationName=cap-maint"),
        *("StartTime=now", "Duration=120", "Nodes=n3", "Users=root", "Flags=MAINT"),
    )
    run(
        *("scontrol", "create", "reservation", "ReservationName=cap-later"),
        *("StartTime=now+3600", "Duration=60", "Nodes=ALL", "Users=root", "Flags=MAINT"),
    )
    sbatch("cap-resv-n3", "-w", "n3", "--time=10")
    sbatch("cap-resv-long", "--time=2:00:00", "-N", "3")
    time.sleep(8)  # the scheduler gives every pending job its reason
    (out / "show-reservation.txt").write_text(run("scontrol", "show", "reservation"))
    (out / "squeue-reservation.txt").write_text(run("squeue", "-h", "-o", SQUEUE_FORMAT))
    (out / "sinfo-reservation.txt").write_text(run("sinfo", "-N", "-h", "-o", SINFO_FORMAT))


def main() -> int:
    release = releases.get()
    os.environ["PATH"] = release.path_env()
    out = HERE / release.name
    directory = Path(tempfile.mkdtemp(prefix="rtool-capture-"))
    cluster = control.up(directory, release=release.name)
    os.environ.update(cluster.env)
    try:
        capture(out)
    finally:
        control.down(directory)
        shutil.rmtree(directory, ignore_errors=True)
    print(f"captured Slurm {release.name} reservations into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
