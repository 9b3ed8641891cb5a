"""`scripts/local-slurm up --simulated M`: a cluster with more nodes than slurmd (the 1,000-node
scale bench's shape), started from the command line as a user would."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devtools.localslurm import control
from tests.helpers import wait_for

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "local-slurm"


def _run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


def test_out_of_range_simulated_nodes_are_refused_in_one_line(tmp_path: Path) -> None:
    res = _run("up", "--simulated", "-1", "--dir", str(tmp_path), timeout=60)
    assert res.returncode == 2 and "--simulated must be between 0 and" in res.stderr
    assert not (tmp_path / "slurm.conf").exists()


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_simulated_nodes_are_listed_idle_and_jobs_run_on_the_real_node(tmp_path: Path) -> None:
    where = tmp_path / "cluster"
    try:
        res = _run(
            "up", "--nodes", "1", "--simulated", "20", "--no-accounting", "--dir", str(where)
        )
        assert res.returncode == 0, res.stderr
        assert "export SLURM_CONF=" in res.stdout
        env = control.Cluster(where).env
        nodes: dict[str, str] = {}

        def listed_idle() -> bool:  # the simulated ones once slurmctld pinged them (n1 answers)
            out = subprocess.run(
                ["sinfo", "-N", "-h", "-o", "%N %t"], env=env, capture_output=True, text=True
            ).stdout
            nodes.update(line.split() for line in out.splitlines())
            return len(nodes) == 21 and set(nodes.values()) == {"idle"}

        wait_for(listed_idle, 120, 2, "21 nodes idle")
        job = subprocess.run(
            ["srun", "-N", "1", "-t", "1", "bash", "-c", "echo $SLURMD_NODENAME"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert job.stdout.strip() == "n1", job.stderr  # Weight: the real node first
    finally:
        _run("down", "--dir", str(where), timeout=120)
