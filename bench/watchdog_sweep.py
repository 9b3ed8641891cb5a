"""Benchmark of one watchdog sweep (the runner's `sweep`, as `rtool watch all` runs it).

    python bench/watchdog_sweep.py [--repeat 7] [--timeout 2]

Measures, in the same run:
  baseline  one bare `squeue` call + one bare statfs child (the irreducible costs)
  healthy   1 job + 1 log + 10 disk paths (tmpfs mounts when root) + memory: median wall time
  hung      the same plus one FUSE mount whose statfs never answers: must be ~ timeout + healthy
  squeue    squeue calls per sweep watching 1 and 20 job names (must be 1 and 1)
Uses $SLURM_CONF when set, else starts a local Slurm in a temp folder (and stops it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import median_seconds, slurm_conf  # noqa: E402
from rtool.core.slurm import Slurm  # noqa: E402
from rtool.core.state import StateDir  # noqa: E402
from rtool.watchdogs.base import ProbeEnv, Watchdog  # noqa: E402
from rtool.watchdogs.config import DiskWatch, JobWatch, LogWatch, MemoryWatch  # noqa: E402
from rtool.watchdogs.disk import DiskWatchdog  # noqa: E402
from rtool.watchdogs.job import JobWatchdog  # noqa: E402
from rtool.watchdogs.log import LogWatchdog  # noqa: E402
from rtool.watchdogs.memory import MemoryWatchdog  # noqa: E402
from rtool.watchdogs.probes import child  # noqa: E402
from rtool.watchdogs.runner import query_for, sweep  # noqa: E402

HUNG_FUSE = ROOT / "tests" / "watchdogs" / "hung_fuse.py"


@contextlib.contextmanager
def disk_paths(base: Path, n: int) -> Iterator[list[Path]]:
    paths = []
    for i in range(n):
        p = base / f"d{i}"
        p.mkdir()
        if os.geteuid() == 0:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=10M", "tmpfs", str(p)], check=True)
        paths.append(p)
    try:
        yield paths
    finally:
        if os.geteuid() == 0:
            for p in paths:
                subprocess.run(["umount", "-l", str(p)], check=False)


@contextlib.contextmanager
def hung_mount(base: Path) -> Iterator[Path]:
    point = base / "hung"
    point.mkdir()
    server = subprocess.Popen(
        [sys.executable, str(HUNG_FUSE), str(point)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while str(point) not in child.read_mount_points():
            if time.monotonic() > deadline:
                raise SystemExit("FUSE mount did not appear")
            time.sleep(0.05)
        yield point
    finally:
        server.kill()
        server.wait()
        subprocess.run(["fusermount", "-u", "-z", str(point)], check=False, capture_output=True)


def watchdogs(base: Path, disks: list[Path], timeout: float) -> list[Watchdog]:
    log = base / "train.out"
    log.write_text("step 1\n")
    return [
        JobWatchdog([JobWatch(name="bench-train")], timeout),
        LogWatchdog([LogWatch(path=str(log), stale="30m")], timeout),
        DiskWatchdog([DiskWatch(path=str(p), max_used="80%") for p in disks], timeout),
        MemoryWatchdog([MemoryWatch()], timeout),
    ]


def run_sweep(wds: list[Watchdog], state: StateDir, timeout: float) -> Slurm:
    s = Slurm(timeout=timeout)
    sweep(wds, ProbeEnv(s, state, query_for(wds)), timeout)
    return s


def squeue_calls(n: int, state: StateDir, timeout: float) -> int:
    wds: list[Watchdog] = [JobWatchdog([JobWatch(name=f"w{i}") for i in range(n)], timeout)]
    return sum(1 for argv in run_sweep(wds, state, timeout).calls if argv[0] == "squeue")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=2.0)
    args = ap.parse_args()
    t = args.timeout
    with slurm_conf(), tempfile.TemporaryDirectory(prefix="rtool-bench-") as tmp:
        base = Path(tmp)
        state = StateDir(base / "state")
        with disk_paths(base, 10) as disks:
            wds = watchdogs(base, disks, t)
            run_sweep(wds, state, t)  # warm-up
            sq = Slurm(timeout=t)

            def baseline() -> None:
                sq.squeue(names=["bench-train"])
                child.statvfs_all([str(disks[0])], [time.monotonic() + t])

            base_s = median_seconds(baseline, args.repeat)
            healthy = median_seconds(lambda: run_sweep(wds, state, t), args.repeat)
            with hung_mount(base) as hung:
                hung_wds = watchdogs(base, [*disks, hung], t)
                # a fresh state each time: the mount is probed (and times out) every sweep
                hung_s = median_seconds(
                    lambda: run_sweep(hung_wds, StateDir(tempfile.mkdtemp(dir=base)), t),
                    max(3, args.repeat // 2),
                )
                run_sweep(hung_wds, state, t)  # times out once and remembers the mount
                remembered = median_seconds(lambda: run_sweep(hung_wds, state, t), args.repeat)
        calls1, calls20 = squeue_calls(1, state, t), squeue_calls(20, state, t)
    print(f"baseline (1 squeue + 1 statfs child)  {base_s * 1000:8.1f} ms")
    print(
        f"healthy sweep (job+log+10 disks+mem)  {healthy * 1000:8.1f} ms"
        f"   ratio to baseline {healthy / base_s:5.2f}"
    )
    print(
        f"sweep with one hung mount (t={t:g}s)   {hung_s * 1000:8.1f} ms"
        f"   ratio to (timeout + healthy) {hung_s / (t + healthy):5.2f}"
    )
    print(
        f"next sweeps, hung mount remembered    {remembered * 1000:8.1f} ms"
        f"   ratio to healthy {remembered / healthy:5.2f}"
    )
    print(
        f"squeue calls per sweep: 1 name -> {calls1}, 20 names -> {calls20}"
        f"   ratio {calls20 / calls1:g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
