"""The NODE_FAIL lookup's memory of which sacct has no FailedNode field (Slurm 22.05) follows
the sacct that runs now: after an upgrade of that sacct (a new program: path, change time,
size), one sweep asks twice and the next ones once again (on the real local Slurm)."""

from __future__ import annotations

from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.nodes.blame import MEMORY, Memory, refresh


def test_an_upgraded_sacct_is_asked_twice_once_not_on_every_sweep(slurm_cluster, tmp_path):
    state = StateDir(tmp_path / "state")
    state.write_json(MEMORY, Memory(no_failed_node="/usr/bin/sacct:1:1").to_json())  # before
    counts = []
    for _ in range(3):
        s = Slurm(timeout=30)
        refresh(s, state, ["rt-nobody"], 3600)
        counts.append(sum(1 for c in s.calls if c[0] == "sacct"))
    # 22.05: [2, 1, 1] (the first finds no FailedNode); 24.11 has the field: [1, 1, 1]
    assert counts[0] <= 2 and counts[1:] == [1, 1], counts
