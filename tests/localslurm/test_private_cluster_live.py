"""The test fixtures' private clusters leave nothing behind: a run of the suite starts several
(each with MariaDB's data, about 180 MB), and a machine running it every day filled its disk."""

from __future__ import annotations

import contextlib

import psutil
import pytest

from tests.helpers import private_cluster


@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_a_private_cluster_is_stopped_and_its_folder_removed() -> None:
    with private_cluster("rtool-slurm-t-", "a one-node Slurm", nodes=1, accounting=False) as c:
        folder, pid = c.dir, c.pid("slurmctld")
        assert folder.is_dir() and c.alive("slurmctld") and pid
    assert not folder.exists()
    with contextlib.suppress(psutil.NoSuchProcess):  # gone, or a zombie of this process
        assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
