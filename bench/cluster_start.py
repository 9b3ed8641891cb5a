"""Cold start of the local Slurm (devtools.localslurm.control), against a baseline in the same run:

- baseline: one node, no accounting (`up --nodes 1 --no-accounting`: slurmctld + one slurmd);
- multi: the test and demo cluster, 3 nodes `n1..n3` with accounting (MariaDB initialised in a
  new folder and started, slurmdbd, `sacctmgr add cluster`, slurmctld, three slurmd), until
  every node is idle and sacct answers;
- node failure: `fail_node` then `revive_node` on the multi cluster (the node takes jobs again).

    python bench/cluster_start.py [--runs 3]

Every start is in a new temp folder (a cold start: a new database too); each cluster is stopped
(`down`) and its folder removed after. Prints the median seconds and the ratio multi/baseline.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.localslurm import control


def cold_start(nodes: int, accounting: bool) -> tuple[float, float | None]:
    """(seconds to ready, seconds for a node failure + revive, or None on one node)."""
    d = Path(tempfile.mkdtemp(prefix="rtool-bench-cluster-"))
    try:
        t = time.perf_counter()
        cluster = control.up(d, nodes=nodes, accounting=accounting)
        start = time.perf_counter() - t
        cycle = None
        if nodes > 1:
            t = time.perf_counter()
            cluster.fail_node(cluster.nodes[-1], "bench: node failure")
            cluster.revive_node(cluster.nodes[-1])
            cycle = time.perf_counter() - t
        return start, cycle
    finally:
        control.down(d)
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    base, multi, cycles = [], [], []
    for _ in range(args.runs):
        base.append(cold_start(1, False)[0])
        start, cycle = cold_start(3, True)
        multi.append(start)
        cycles.append(cycle or 0.0)
    b, m, c = statistics.median(base), statistics.median(multi), statistics.median(cycles)
    rows = [
        ("1 node, no accounting (baseline)", b, base),
        ("3 nodes + accounting", m, multi),
        ("fail + revive a node (3 nodes)", c, cycles),
    ]
    for label, med, runs in rows:
        print(f"{label:<34} median {med:6.2f} s   runs {[round(x, 2) for x in runs]}")
    print(f"ratio 3 nodes + accounting / baseline: {m / b:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
