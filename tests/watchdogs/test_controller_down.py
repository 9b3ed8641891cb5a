"""slurmctld really stopped (its daemon, not a wrong port) while the watchdogs run: the job
watchdog and a whole sweep say UNKNOWN, never that the job is missing, and the sweep says once
that slurmctld did not answer; once slurmctld is back (it recovers its jobs from its state
folder) they say OK again."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm


@pytest.mark.slurm
def test_slurmctld_down_is_unknown_never_missing_then_ok(
    slurm_cluster: control.Cluster,
    slurm: Slurm,
    job_name: str,
    cli: Callable[..., Any],
    tmp_path: Path,
) -> None:
    job = slurm.sbatch(["-J", job_name, "-o", "/dev/null"], script="#!/bin/bash\nsleep 300\n")
    slurm_cluster.wait_job_state(job.job_id, ["RUNNING"], timeout=60)
    config = tmp_path / "rtool.toml"
    config.write_text(
        f'[state]\ndir = "{tmp_path / "state"}"\n[[watch.job]]\nname = "{job_name}"\n'
    )
    one = ("watch", "job", "--name", job_name, "--no-notify", "--timeout", "20s")
    sweep = ("--config", str(config), "watch", "all", "--no-notify", "--json", "--timeout", "20s")

    assert cli(*one).code == 0
    slurm_cluster.stop_controller()
    try:
        assert not slurm_cluster.alive("slurmctld")
        start = time.monotonic()
        r = cli(*one)
        assert r.code == 3, r.out
        assert r.out.startswith(f"JOB UNKNOWN - {job_name}: squeue failed"), r.out
        assert "missing" not in r.out.lower() and "CRITICAL" not in r.out
        s = cli(*sweep)
        assert s.code == 3, s.out
        report = json.loads(s.out)
        assert report["status"] == "UNKNOWN" and "CRITICAL" not in s.out, s.out
        results = {r["key"]: r for r in report["results"]}
        assert set(results) == {f"job:{job_name}", "slurm:slurmctld"}, s.out
        res = results[f"job:{job_name}"]
        assert res["watchdog"] == "job" and res["status"] == "UNKNOWN", s.out
        assert "missing" not in res["summary"].lower(), s.out
        # one result speaks for slurmctld; notify folds the job's into it (docs/notify.md)
        assert res["depends"] == ["slurm:slurmctld"], s.out
        ctl = results["slurm:slurmctld"]
        assert ctl["status"] == "UNKNOWN" and "slurmctld did not answer" in ctl["summary"]
        assert time.monotonic() - start < 60
    finally:
        slurm_cluster.start_controller(timeout=60)
    r = cli(*one)
    assert r.code == 0 and r.out.startswith("JOB OK"), r.out
    assert "SLURM OK - slurmctld: no alert follows from it any more" in r.out, r.out
    assert cli(*sweep).code == 0
