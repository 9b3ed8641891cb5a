"""`rtool submit` warns when the run's measured save (its heartbeat, from earlier attempts) is
longer than the GraceTime of the preemptible partition it goes to (the local cluster's `low`
and `low0`, docs/local-slurm.md), and says nothing on a partition that is never preempted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.app.commands.submit_cmd import save_vs_grace
from rtool.core.slurm.partition import Partition
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.fixture
def slurm_cluster(preemptible: control.Cluster) -> control.Cluster:
    """This module's tests run on the preemptible cluster (tests/conftest.py: preempt_cluster)."""
    return preemptible


def test_the_warning_names_the_save_the_grace_and_what_to_change() -> None:
    low = Partition("low", 20.0, "REQUEUE", False, 1)
    said = save_vs_grace(45.0, low)
    assert said is not None
    assert "measured save (45.0s, from earlier attempts)" in said
    assert "partition low's GraceTime 20s" in said and "save_every" in said
    assert save_vs_grace(12.0, low) is None
    assert save_vs_grace(None, low) is None
    assert "GraceTime 0 (only KillWait)" in str(
        save_vs_grace(1.0, Partition("p", 0, "REQUEUE", 0, 1))
    )
    assert save_vs_grace(45.0, Partition("high", 0.0, "OFF", False, 2)) is None


@pytest.mark.slurm
def test_submit_warns_on_a_preemptible_partition_only(
    cli: Cli, slurm_cluster: object, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text("print('train')\n")
    hb = tmp_path / "hb.json"
    hb.write_text(json.dumps({"state": "stopped", "time": 1.8e9, "longest_save_seconds": 45.0}))

    def submit(part: str) -> CliResult:
        args = ["--partition", part, "--heartbeat", str(hb), "--dry-run"]
        return cli("submit", str(tmp_path / "train.py"), *args)

    res = submit("low")
    assert res.code == 0, res.err
    assert (
        "rtool: warning: the run's measured save (45.0s, from earlier attempts) is longer "
        in res.err
    )
    assert "partition low's GraceTime 20s" in res.err
    assert "GraceTime 0 (only KillWait)" in submit("low0").err
    for quiet in ("high", "debug"):
        res = submit(quiet)
        assert res.code == 0 and "measured save" not in res.err, res.err
