"""Multi-node launches that form one job, on the local 3-node cluster (torch gloo on CPU):
`rtool submit --nodes N --launcher L` with torchrun on 2 nodes, `accelerate launch` on 3 nodes
and the srun-native mode on 2 nodes with 2 processes each, the three jobs at once. For each:

- one world of the right size: every process sees the same world size, ranks 0..W-1 once
  each, and an all-reduce over the world sums to W;
- every rank on its node: node k (SLURM_NODEID) holds ranks k*P .. k*P+P-1, P per node;
- the warning signal sent to the batch shell (as Slurm does with B:) reaches every rank on every
  node (the prelude's forwarding), and `rtool stop --run NAME` (the run's own kill switch) stops
  every rank at the same step, with one checkpoint writer; the job ends COMPLETED.
"""

from __future__ import annotations

import getpass
import json
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from devtools.localslurm import control, nodeops
from devtools.localslurm.daemons import sh
from rtool.core.slurm import Slurm
from tests.e2e.conftest import RtoolRun
from tests.helpers import wait_for

TOY = Path(__file__).with_name("launch_toy.py")
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Case:
    kind: str
    nodes: int
    per_node: int
    launcher: str

    @property
    def world(self) -> int:
        return self.nodes * self.per_node


CASES = [
    Case("torchrun", 2, 2, f"{BIN / 'torchrun'} --nproc-per-node 2"),
    Case("accelerate", 3, 1, f"{BIN / 'accelerate'} launch --multi_gpu"),
    Case("srun", 2, 2, "srun --ntasks-per-node 2"),
]


def events(folder: Path, kind: str) -> list[dict[str, Any]]:
    try:
        lines = (folder / "events.log").read_text().splitlines()
    except FileNotFoundError:
        return []
    return [e for e in map(json.loads, lines) if e["event"] == kind]


def _submit(rtool: RtoolRun, tmp_path: Path, case: Case, run: str) -> tuple[Path, str]:
    folder = tmp_path / case.kind
    folder.mkdir()
    args = ("submit", str(TOY), "--run", run, "--nodes", str(case.nodes))
    args += ("--launcher", case.launcher, "--python", sys.executable, "--time", "5")
    env = {"TOY_DIR": str(folder), "OMP_NUM_THREADS": "1"}
    job = rtool(*args, "--parsable", cwd=folder, env=env).stdout.strip()
    return folder, job


def _check_world(case: Case, folder: Path) -> None:
    up = events(folder, "up")
    assert sorted(e["rank"] for e in up) == list(range(case.world)), up
    assert {(e["world"], e["summed"]) for e in up} == {(case.world, case.world)}, up
    for e in up:  # node k holds ranks k*P .. k*P+P-1
        assert e["rank"] == e["node_id"] * case.per_node + e["local_rank"], e
    nodes = {e["node_id"]: e["node"] for e in up}
    assert sorted(nodes) == list(range(case.nodes)) and len(set(nodes.values())) == case.nodes


def _check_stop(case: Case, folder: Path) -> None:
    got = events(folder, "signal")
    assert sorted({e["rank"] for e in got}) == list(range(case.world)), got
    up = {e["rank"]: e["node"] for e in events(folder, "up")}
    assert all(up[e["rank"]] == e["node"] for e in got)  # each on its own node
    saved, wrote = events(folder, "saved"), events(folder, "wrote")
    steps = {e["step"] for e in saved}
    assert len(steps) == 1 and sorted(e["rank"] for e in saved) == list(range(case.world)), saved
    assert [(e["rank"], e["step"]) for e in wrote] == [(0, *steps)], wrote  # one writer
    assert json.loads((folder / "ckpt.json").read_text())["step"] in steps


def _wait_events(folder: Path, kind: str, count: int, timeout: float) -> None:
    def enough() -> bool:
        return len(events(folder, kind)) >= count

    wait_for(enough, timeout, 0.5, f"{count} {kind} event(s) in {folder}")


def _ended(slurm: Slurm, job: str) -> tuple[str, int | None] | None:
    """The job's end state and exit code once accounting says it ended."""
    recs = [r for r in slurm.sacct(job_ids=[job]) if r.job_id == job and r.finished]
    return (recs[0].state, recs[0].exit_code) if recs else None


def _whole_cluster(cluster: control.Cluster) -> None:
    """The three jobs need every core of every node at once: no job an earlier test left on
    the session's cluster, and every node back (a node-failure test may have left one down)."""
    sh(["scancel", f"--user={getpass.getuser()}"], env=cluster.env, check=False)
    wait_for(lambda: not sh(["squeue", "-h"], env=cluster.env).stdout.strip(), 120, 1, "no job")
    for node in cluster.nodes:
        if cluster.node_states().get(node) not in control.READY:
            nodeops.revive_node(cluster, node)


@pytest.mark.slurm
@pytest.mark.timeout(700)
def test_launchers_form_one_world_across_nodes_and_stop_together(
    rtool: RtoolRun, slurm: Slurm, slurm_cluster: control.Cluster, job_name: str, tmp_path: Path
) -> None:
    _whole_cluster(slurm_cluster)
    (tmp_path / "rtool.toml").write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    runs = {c.kind: f"{job_name}-{c.kind}" for c in CASES}
    jobs = {c.kind: _submit(rtool, tmp_path, c, runs[c.kind]) for c in CASES}
    try:
        for c in CASES:
            _wait_events(jobs[c.kind][0], "up", c.world, 240)
            _check_world(c, jobs[c.kind][0])
        for c in CASES:  # what Slurm does with --signal=B:USR1@...: the batch shell only
            slurm.scancel([jobs[c.kind][1]], signal="USR1", batch=True)
        for c in CASES:
            _wait_events(jobs[c.kind][0], "signal", c.world, 120)
            rtool("stop", "--run", runs[c.kind])
        for c in CASES:
            job = jobs[c.kind][1]
            wait_for(partial(_ended, slurm, job), 120, 0.5, f"{c.kind} to end")
            _check_stop(c, jobs[c.kind][0])
            assert _ended(slurm, job) == ("COMPLETED", 0), c.kind
    finally:
        for c in CASES:
            slurm.scancel(name=runs[c.kind])
