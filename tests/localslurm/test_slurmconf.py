"""The local cluster's slurm.conf with simulated nodes (pure: files only, no daemon)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.localslurm.control import _current
from devtools.localslurm.nodeops import Cluster
from devtools.localslurm.slurmconf import (
    MAX_NODES,
    MAX_SIMULATED,
    PREEMPTION,
    Layout,
    write_slurm_conf,
)


def test_simulated_nodes_follow_the_real_ones_on_n1s_port_and_are_picked_last(
    tmp_path: Path,
) -> None:
    layout = Layout.new(2, accounting=False, simulated=3)
    assert layout.nodes == ["n1", "n2"] and layout.simulated == ["n3", "n4", "n5"]
    assert layout.node_range == "n[1-5]"
    conf = write_slurm_conf(tmp_path, layout, "/bin/false").read_text()
    lines = {ln.split()[0]: ln for ln in conf.splitlines() if ln.startswith("NodeName=")}
    assert sorted(lines) == [f"NodeName=n{i}" for i in range(1, 6)]
    n1_port = f"Port={layout.node_ports['n1']} "
    for name in ("n3", "n4", "n5"):
        assert n1_port in lines[f"NodeName={name}"] and lines[f"NodeName={name}"].endswith(
            " Weight=1000"
        )
    assert "Weight" not in lines["NodeName=n1"] + lines["NodeName=n2"]
    assert "PartitionName=debug Nodes=n[1-5] " in conf
    assert (tmp_path / "gres.conf").read_text().startswith("NodeName=n[1-5] Name=gpu ")


def test_a_layout_saved_before_simulated_nodes_loads_without_them(tmp_path: Path) -> None:
    layout = Layout.new(3, accounting=True, simulated=2)
    layout.save(tmp_path)
    assert Layout.load(tmp_path) == layout
    raw = json.loads((tmp_path / "cluster.json").read_text())
    del raw["simulated"]
    (tmp_path / "cluster.json").write_text(json.dumps(raw))
    old = Layout.load(tmp_path)
    assert old is not None and old.simulated == [] and old.node_range == "n[1-3]"


@pytest.mark.parametrize(
    ("nodes", "simulated"), [(0, 5), (MAX_NODES + 1, 0), (2, -1), (2, MAX_SIMULATED + 1)]
)
def test_node_counts_out_of_bounds_are_refused(nodes: int, simulated: int) -> None:
    with pytest.raises(ValueError, match=f"--nodes must be 1..{MAX_NODES}"):
        Layout.new(nodes, accounting=False, simulated=simulated)


def test_two_clusters_on_this_host_number_their_jobs_apart(tmp_path: Path) -> None:
    """The releases' suites run side by side, each with its own clusters: with the same job ids
    their multi-node launches picked the same rendezvous port (15000 + id % 15000) at the same
    moment, and one world never formed (the launchers test, on whichever lost the race)."""
    firsts = []
    for name in ("a", "b"):
        layout = Layout.new(1, accounting=False)
        conf = write_slurm_conf(tmp_path / name, layout, "/bin/false").read_text()
        firsts += [ln for ln in conf.splitlines() if ln.startswith("FirstJobId=")]
    assert len(firsts) == 2 and firsts[0] != firsts[1], firsts


def test_up_reuses_a_running_cluster_whose_partitions_are_todays(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    plain, preempt = Layout.new(2, accounting=False), Layout.new(2, False, extra=PREEMPTION)
    write_slurm_conf(tmp_path, plain, "/bin/false")
    assert _current(cluster, plain)  # a plain cluster is reused (no preemption partitions)
    assert not _current(cluster, preempt)  # asked for preemption: started again
    write_slurm_conf(tmp_path, preempt, "/bin/false")
    assert _current(cluster, preempt)
    conf = cluster.conf.read_text()
    cluster.conf.write_text(conf.replace(" PriorityTier=2 PreemptMode=OFF", ""))
    assert not _current(cluster, preempt)  # written before today's partitions: started again
    cluster.conf.unlink()
    assert not _current(cluster, plain)
