"""The local 3-node cluster with accounting: jobs across nodes, sacct, node failure and drain."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.localslurm import control, releases
from rtool.core.slurm import Slurm
from tests.helpers import wait_for


@pytest.fixture
def node_back(slurm_cluster: control.Cluster) -> Iterator[list[str]]:
    """Nodes a test failed or drained: brought back afterwards, whatever happened."""
    touched: list[str] = []
    yield touched
    for name in touched:
        slurm_cluster.revive_node(name, timeout=60)


def test_three_nodes_with_accounting(slurm_cluster: control.Cluster, slurm: Slurm) -> None:
    assert slurm_cluster.nodes == ["n1", "n2", "n3"] and slurm_cluster.accounting
    release = releases.get()  # RTOOL_TEST_SLURM
    assert str(control.status(slurm_cluster)).endswith(f"; accounting on; Slurm {release.name}")
    assert set(slurm_cluster.node_states()) == {"n1", "n2", "n3"}
    assert slurm.accounting_available() is True


def test_daemons_and_clients_come_from_the_chosen_release(
    slurm_cluster: control.Cluster,
) -> None:
    """A 24.11 client against a 22.05 slurmdbd fails ("Invalid Protocol Version"): every
    daemon runs the release's own program, and PATH gives its clients."""
    release = releases.get()
    assert slurm_cluster.release == release
    dirs = {d.resolve() for d in release.bindirs}
    pids = [slurm_cluster.pid(d) for d in ("slurmctld", "slurmdbd")]
    pids += [slurm_cluster.pid(f"slurmd-{n}") for n in slurm_cluster.nodes]
    for pid in pids:
        exe = Path(f"/proc/{pid}/exe").resolve()
        assert exe.parent in dirs, (pid, exe)
    releases.check_clients(release)  # raises when PATH gives another release's clients
    assert (releases.version(slurm_cluster.env) or "").startswith(f"{release.name}.")


def test_sacct_sees_nodes_exit_codes_and_cancels(
    slurm_cluster: control.Cluster, slurm: Slurm, job_name: str, tmp_path: Path
) -> None:
    out = tmp_path / "hosts.out"
    two = slurm.sbatch(
        ["-J", job_name, "-N", "2", "-o", str(out)],
        script="#!/bin/bash\nsrun bash -c 'echo $SLURMD_NODENAME'\n",
    ).job_id
    failed = slurm.sbatch(["-J", job_name, "-o", "/dev/null"], script="#!/bin/bash\nexit 3\n")
    long = slurm.sbatch(["-J", job_name, "-o", "/dev/null"], script="#!/bin/bash\nsleep 60\n")
    slurm_cluster.wait_job_state(two, ["COMPLETED"], timeout=60)
    slurm_cluster.wait_job_state(failed.job_id, ["FAILED"], timeout=60)
    slurm_cluster.wait_job_state(long.job_id, ["RUNNING"], timeout=60)
    slurm.scancel([long.job_id])
    slurm_cluster.wait_job_state(long.job_id, ["CANCELLED"], timeout=60)

    def records() -> dict | None:
        recs = {r.job_id: r for r in slurm.sacct(names=[job_name], since=time.time() - 300)}
        done = len(recs) == 3 and all(r.end is not None for r in recs.values())
        return recs if done else None

    recs = wait_for(records, 30, what="sacct records of the three jobs")
    assert isinstance(recs, dict)
    assert recs[two].state == "COMPLETED" and len(recs[two].nodes) == 2
    assert sorted(out.read_text().split()) == sorted(recs[two].nodes)
    assert (recs[failed.job_id].state, recs[failed.job_id].exit_code) == ("FAILED", 3)
    assert recs[long.job_id].state == "CANCELLED" and recs[long.job_id].elapsed_s is not None
    assert slurm.sacct(job_ids=[two]) == [recs[two]]


def test_node_failure_requeues_on_the_other_nodes(
    slurm_cluster: control.Cluster,
    slurm: Slurm,
    job_name: str,
    node_back: list[str],
    tmp_path: Path,
) -> None:
    # each task leaves a marker once it runs: the node is failed with its step under way
    # (RUNNING comes before the step's slurmstepd and sleep exist on the second node)
    task = f"touch {tmp_path}/up-$SLURMD_NODENAME; exec sleep 120"
    job = slurm.sbatch(
        ["-J", job_name, "-N", "2", "--requeue", "-o", "/dev/null"],
        script=f"#!/bin/bash\nsrun bash -c '{task}'\n",
    ).job_id
    slurm_cluster.wait_job_state(job, ["RUNNING"], timeout=60)
    [first] = slurm.sacct(job_ids=[job])
    victim = first.nodes[-1]
    node_back.append(victim)
    marker = tmp_path / f"up-{victim}"
    wait_for(marker.exists, 60, what=f"the step's task on {victim}")
    killed = slurm_cluster.fail_node(victim, "rtool test: power cut")
    assert len(killed) >= 3  # slurmd, the step's slurmstepd, its sleep
    assert slurm_cluster.node_states()[victim].startswith("down")
    slurm_cluster.wait_job_state(job, ["RUNNING"], timeout=60)

    def attempts() -> list | None:
        recs = slurm.sacct(job_ids=[job])
        return recs if [r.state for r in recs] == ["NODE_FAIL", "RUNNING"] else None

    fail, again = wait_for(attempts, 30, what="NODE_FAIL then RUNNING in sacct -D")  # type: ignore[misc]
    assert victim in fail.nodes and victim not in again.nodes and len(again.nodes) == 2
    slurm.scancel([job])


def test_drained_node_takes_no_new_job(
    slurm_cluster: control.Cluster, slurm: Slurm, job_name: str, node_back: list[str]
) -> None:
    node_back.append("n3")
    slurm_cluster.drain_node("n3", "rtool test: bad gpu")
    job = slurm.sbatch(
        ["-J", job_name, "-w", "n3", "-o", "/dev/null"], script="#!/bin/bash\nsleep 1\n"
    ).job_id

    def reason() -> str | None:
        jobs = slurm.squeue(job_ids=[job])
        return jobs[0].reason if jobs and jobs[0].reason else None

    # 22.05 names the node in the reason, 24.11 does not: rtool reads neither (it asks
    # scontrol show job and sinfo, docs/slurm-releases.md); this pins what each one says
    said = {
        "22.05": "ReqNodeNotAvail, UnavailableNodes:n3",
        "24.11": "ReqNodeNotAvail, May be reserved for other job",
    }
    assert wait_for(reason, 30, what="a pending reason") == said[releases.get().name]
    assert slurm_cluster.node_states()["n3"] in ("drained", "draining")
    slurm_cluster.revive_node("n3")
    slurm_cluster.wait_job_state(job, ["COMPLETED"], timeout=60)


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_simulated_nodes_show_idle_and_a_dead_slurmd_is_started_again(tmp_path: Path) -> None:
    """bench/scale.py's 1,000 nodes: 2 slurmd and 30 nodes in slurm.conf without one (they have
    n1's port, so its slurmd answers their pings): sinfo lists all 32 idle, only the 2 run a
    slurmd; a slurmd that died at start (its port taken for a moment) is started again."""
    from devtools.localslurm import nodeops
    from devtools.localslurm.daemons import stop_pid

    directory = tmp_path / "c"
    try:
        cluster = control.up(directory, nodes=2, simulated=30, accounting=False)
        assert cluster.nodes == ["n1", "n2"] and len(list(directory.glob("slurmd-*.pid"))) == 2
        names = {f"n{i}" for i in range(1, 33)}
        assert "Nodes=n[1-32] " in cluster.conf.read_text()

        def all_idle() -> bool:
            states = cluster.node_states()
            return set(states) == names and set(states.values()) == {"idle"}

        wait_for(all_idle, 90, 1, "32 idle nodes in sinfo")
        stop_pid(cluster.pid("slurmd-n2"), "slurmd")
        assert not cluster.alive("slurmd-n2")
        every = nodeops.wait_ready(
            cluster, 60, lambda c: all(c.alive(f"slurmd-{n}") for n in c.nodes)
        )
        assert every and cluster.alive("slurmd-n2")
    finally:
        control.down(directory)
