"""Outcomes of the cron's `*.slurm` jobs: from sacct on the accounting cluster, from scontrol
without accounting, `unknown` with the reason once neither can tell."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm, parse_sacct
from rtool.cron.outcomes import NO_ACCOUNTING, from_sacct, resolve

SACCT = """\
30|30|COMPLETED|0:0|n1|2026-11-23T14:00:00|2026-11-23T14:00:01|2026-11-23T14:00:02|1|debug|ok
31|31|OUT_OF_MEMORY|0:125|n2|2026-11-23T14:00:00|2026-11-23T14:00:01|2026-11-23T14:00:02|1|debug|big
32_1|33|COMPLETED|0:0|n1|2026-11-23T14:00:00|2026-11-23T14:00:01|2026-11-23T14:00:02|1|debug|a
32_2|34|TIMEOUT|0:0|n[2-3]|2026-11-23T14:00:00|2026-11-23T14:00:01|2026-11-23T14:01:02|61|debug|a
35|35|RUNNING|0:0|n3|2026-11-23T14:00:00|2026-11-23T14:00:01|Unknown|5|debug|r
"""


def test_from_sacct_states_exit_codes_and_arrays() -> None:
    recs = parse_sacct(SACCT)
    ok = from_sacct("30", recs[:1])
    assert ok is not None and (ok.status, ok.exit_code, ok.source) == ("ok", 0, "sacct")
    oom = from_sacct("31", recs[1:2])
    assert oom is not None and (oom.status, oom.state, oom.signal) == (
        "failed",
        "OUT_OF_MEMORY",
        125,
    )
    assert oom.message == "Slurm job 31 OUT_OF_MEMORY, signal 125 on n2"
    arr = from_sacct("32", recs[2:4])
    assert arr is not None and arr.status == "timeout" and arr.nodes == ("n1", "n2", "n3")
    assert from_sacct("35", recs[4:]) is None and from_sacct("36", []) is None


def _finished(slurm: Slurm, cluster: control.Cluster, name: str, body: str) -> str:
    job = slurm.sbatch(["-J", name, "-o", "/dev/null"], script=f"#!/bin/bash\n{body}\n").job_id
    cluster.wait_job_state(job, ["COMPLETED", "FAILED"], timeout=60)
    return job


@pytest.mark.slurm
def test_outcomes_come_from_sacct_with_accounting_and_scontrol_without(
    slurm_cluster: control.Cluster,
    slurm: Slurm,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = _finished(slurm, slurm_cluster, job_name, "true")
    bad = _finished(slurm, slurm_cluster, job_name, "exit 3")
    running = slurm.sbatch(["-J", job_name, "-o", "/dev/null"], script="#!/bin/bash\nsleep 60\n")
    gone = "999999"  # slurmctld never knew it (as a job forgotten after MinJobAge)
    ids = [good, bad, running.job_id, gone]
    now = time.time()
    started = dict.fromkeys(ids, now)

    def settled() -> dict:
        found = resolve(slurm, ids, started, now)
        return found if {good, bad} <= set(found) else {}

    deadline = time.monotonic() + 30
    found = settled()
    while not found and time.monotonic() < deadline:  # slurmdbd may lag a moment
        time.sleep(0.5)
        found = settled()
    assert found[good].as_dict() == {
        "job_id": good,
        "status": "ok",
        "exit_code": 0,
        "state": "COMPLETED",
        "source": "sacct",
    }
    assert (found[bad].status, found[bad].exit_code, found[bad].source) == ("failed", 3, "sacct")
    assert found[bad].nodes and found[bad].nodes[0] in slurm_cluster.nodes
    assert running.job_id not in found and gone not in found  # running; retried later

    # Without accounting: scontrol answers while slurmctld knows the job; then `unknown`, why.
    text = re.sub(r"(?m)^AccountingStorage\w*=.*$", "", Path(os.environ["SLURM_CONF"]).read_text())
    conf = tmp_path / "slurm.conf"
    conf.write_text(text + "AccountingStorageType=accounting_storage/none\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    found = resolve(Slurm(timeout=20), ids, started, now)
    assert (found[bad].status, found[bad].exit_code, found[bad].source) == ("failed", 3, "scontrol")
    assert found[gone].status == "unknown" and found[gone].why == NO_ACCOUNTING
    assert found[gone].as_dict()["why"].startswith("Slurm accounting is disabled")
    assert running.job_id not in found
    slurm.scancel([running.job_id])
