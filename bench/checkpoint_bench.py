"""Benchmark of the checkpoint watchdog's sweep and of the run timeline page.

    python bench/checkpoint_bench.py [--repeat 7]

Measures, in the same run:
  checkpoint sweep  one probe + check of a folder of N checkpoint folders (8 files each), for
                    N = 10, 100, 1000, 10000, against the baseline in the same run: the disk
                    watchdog's sweep of the same folder (one statfs child, the irreducible cost
                    of probing in an abandonable child). Only the newest few checkpoints are
                    looked into; the rest is one listing: the cost grows with N by the listing.
  timeline page     `run_page` of a run of N attempts (1, 50, 500, 5000) against the text table
                    of `rtool history` for the same ledger, and the page's size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import median_seconds  # noqa: E402
from rtool.app.timeline.run import run_page  # noqa: E402
from rtool.core.state import StateDir  # noqa: E402
from rtool.runs.render import table  # noqa: E402
from rtool.runs.totals import totals  # noqa: E402
from rtool.watchdogs.base import ProbeEnv  # noqa: E402
from rtool.watchdogs.checkpoint.watchdog import CheckpointWatchdog  # noqa: E402
from rtool.watchdogs.config import CheckpointWatch, DiskWatch  # noqa: E402
from rtool.watchdogs.disk import DiskWatchdog  # noqa: E402
from tests.timeline.ledgers import ledger  # noqa: E402


def _folder(root: Path, n: int) -> Path:
    ck = root / f"ckpt-{n}"
    for i in range(n):
        d = ck / f"step_{(i + 1) * 100:08d}"
        d.mkdir(parents=True)
        for f in range(7):
            (d / f"shard{f}.bin").write_bytes(b"\0" * 1024)
        (d / "COMPLETE").touch()
    old = time.time() - 3600
    for p in ck.rglob("*"):
        os.utime(p, (old, old))
    return ck


def sweeps(root: Path, repeat: int) -> None:
    print("checkpoint sweep (median of", repeat, "runs)")
    print(f"{'checkpoints':>12} {'disk sweep':>11} {'ckpt sweep':>11} {'ratio':>6}")
    state = StateDir(root / "state")
    for n in (10, 100, 1000, 10000):
        ck = _folder(root, n)
        disk = DiskWatchdog([DiskWatch(path=str(ck))], 30.0)
        spec = CheckpointWatch(path=str(ck), marker="{NAME}/COMPLETE", max_age="1d")
        ckpt = CheckpointWatchdog([spec], 30.0)

        def run(w: object) -> None:
            out = w.probe(ProbeEnv(None, state))  # type: ignore[attr-defined]
            [r] = w.check(out, time.time())  # type: ignore[attr-defined]
            assert r.status.name in ("OK", "WARNING"), r.summary

        base = median_seconds(lambda: run(disk), repeat)  # noqa: B023
        took = median_seconds(lambda: run(ckpt), repeat)  # noqa: B023
        print(f"{n:>12} {base * 1000:>9.1f}ms {took * 1000:>9.1f}ms {took / base:>5.2f}x")
        shutil.rmtree(ck)


def pages(repeat: int) -> None:
    print("timeline page (median of", repeat, "runs)")
    print(f"{'attempts':>9} {'text table':>11} {'page':>9} {'ratio':>6} {'page size':>10}")
    for n in (1, 50, 500, 5000):
        led = ledger(n)
        now = float(led.updated or 0)
        text = median_seconds(lambda: table(led, totals(led, now), now), repeat)  # noqa: B023
        html = median_seconds(lambda: run_page(led, now), repeat)  # noqa: B023
        size = len(run_page(led, now).encode())
        print(
            f"{n:>9} {text * 1000:>9.2f}ms {html * 1000:>7.2f}ms {html / text:>5.1f}x "
            f"{size / 1024:>8.0f}KiB"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rtool-bench-ckpt-"))
    try:
        sweeps(root, args.repeat)
        pages(args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
