"""On the local cluster: a library upgraded and the config edited while attempt 1 runs; the
node fails, attempt 2 runs with them, and `rtool history` flags both."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm
from tests.helpers import wait_for
from tests.shim.test_provenance import _fake_package
from tests.shim.test_resume_slurm import TOY, Cli, node_back  # noqa: F401  (a fixture)


def _heartbeat(hb: Path) -> dict:  # type: ignore[type-arg]
    try:
        return dict(json.loads(hb.read_text()))
    except (OSError, ValueError):
        return {}


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_history_flags_an_upgraded_package_and_an_edited_config(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    node_back: list[str],  # noqa: F811
) -> None:
    if not getattr(slurm_cluster, "accounting", False):
        pytest.fail("this test needs the 3-node cluster with accounting")
    monkeypatch.chdir(tmp_path)
    site, cfg = tmp_path / "site", tmp_path / "cfg.yaml"
    _fake_package(site, "1.0")
    cfg.write_text("lr: 0.1\n")
    monkeypatch.setenv("PYTHONPATH", str(site))  # sbatch exports it to the job
    run, hb = tmp_path / "run", tmp_path / "run" / "heartbeat.json"
    toy = f"--steps 4000 --step-seconds 0.05 --dir {run} --config {cfg} --import fakelib"
    try:
        res = cli(
            *("submit", str(TOY), "--job-name", job_name, "--array", "0-1%1"),
            *("--heartbeat", str(hb), "--python", sys.executable, "--time", "0:20:00"),
            *("--args", toy, "--requeue"),
        )
        assert res.code == 0, res.err
        wait_for(lambda: _heartbeat(hb).get("packages"), 90, 0.5, "attempt 1's provenance")
        assert "fakelib==1.0" in _heartbeat(hb)["packages"].split()
        assert cli("history", job_name, "--heartbeat", str(hb)).code == 0  # a sweep sees it
        _fake_package(site, "1.1")
        cfg.write_text("lr: 0.2\n")
        jobs = [j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING"]
        assert jobs and jobs[0].nodelist, jobs
        slurm_cluster.fail_node(jobs[0].nodelist)
        node_back.append(jobs[0].nodelist)

        def flagged() -> dict | None:  # type: ignore[type-arg]
            got = cli("history", job_name, "--heartbeat", str(hb), "--json")
            return json.loads(got.out)["changes"].get("2") if got.code == 0 else None

        change = wait_for(flagged, 120, 2, "history flagging attempt 2")
        assert change == {"since": 1, "what": ["fakelib 1.0 -> 1.1", "cfg.yaml edited"]}
        text = cli("history", job_name, "--heartbeat", str(hb)).out
        assert "↳ changed since attempt 1: fakelib 1.0 -> 1.1; cfg.yaml edited" in text, text
    finally:
        slurm.scancel(name=job_name)
