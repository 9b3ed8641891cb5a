"""On the local cluster: a node killed in the middle of a save; the next attempt resumes from
the checkpoint before (rtool.shim.latest_checkpoint), no crash loop, and the ledger and the run
watchdog name the checkpoint set aside and the one resumed from."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "train_toy.py"
Cli = Callable[..., CliResult]


@pytest.fixture
def node_back(slurm_cluster: control.Cluster) -> Iterator[list[str]]:
    """Nodes a test failed: brought back afterwards, whatever happened."""
    touched: list[str] = []
    yield touched
    for name in touched:
        slurm_cluster.revive_node(name, timeout=60)


def _mid_save(top: Path) -> tuple[str, str] | None:
    """(newest complete, half-written) while the toy writes a save after a complete one."""
    if not top.exists():
        return None
    done = sorted(p.name for p in top.iterdir() if (p / "COMPLETE").exists())
    half = sorted(p.name for p in top.iterdir() if not (p / "COMPLETE").exists())
    return (done[-1], half[-1]) if done and half and half[-1] > done[-1] else None


def _submit(cli: Cli, name: str, hb: Path, toy: str) -> None:
    res = cli(
        *("submit", str(TOY), "--job-name", name, "--array", "0-1%1", "--heartbeat", str(hb)),
        *("--python", sys.executable, "--time", "0:20:00", "--args", toy, "--requeue"),
    )
    assert res.code == 0, res.err


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_node_killed_in_a_save_resumes_from_the_checkpoint_before(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    node_back: list[str],
) -> None:
    if not getattr(slurm_cluster, "accounting", False):
        pytest.fail("this test needs the 3-node cluster with accounting")
    monkeypatch.chdir(tmp_path)
    run, hb = tmp_path / "run", tmp_path / "run" / "heartbeat.json"
    top = run / "ckpts"
    toy = f"--steps 4000 --step-seconds 0.05 --dir {run} --ckpt-folders {top} --save-every 30"
    try:
        _submit(cli, job_name, hb, toy + " --save-seconds 6")
        done, half = wait_for(lambda: _mid_save(top), 90, 0.1, "a save under way after one")
        jobs = [j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING"]
        assert jobs and jobs[0].nodelist, jobs
        slurm_cluster.fail_node(jobs[0].nodelist)  # in the middle of writing `half`
        node_back.append(jobs[0].nodelist)

        def warned() -> tuple[int, str] | None:
            res = cli("watch", "run", job_name, "--heartbeat", str(hb), "--no-notify", "--json")
            got = json.loads(res.out)["results"][0] if res.out.strip() else None
            return (res.code, got["summary"]) if got and "set aside" in got["summary"] else None

        code, summary = wait_for(warned, 120, 2, "watch run naming the checkpoint set aside")
        assert code == 1, summary  # WARNING: no crash loop
        assert f"checkpoint set aside: {half} (incomplete: missing {half}/COMPLETE) -> " in summary
        assert summary.endswith(f"; resumed from {done} (attempt 2)"), summary
        res = cli("history", job_name, "--heartbeat", str(hb), "--json")
        attempts = json.loads(res.out)["ledger"]["attempts"]
        assert [a["state"] for a in attempts][:1] == ["NODE_FAIL"], attempts
        assert attempts[1]["resumed_from"] == done and attempts[1]["set_aside"].startswith(half)
        moved = [p for p in top.iterdir() if p.name.startswith(f"{half}.set-aside-")]
        assert len(moved) == 1 and (moved[0] / "state.json").exists()  # kept, not deleted
        start = int(done.split("_")[1]) + 1
        wait_for(lambda: json.loads(hb.read_text()).get("step_at_start") == start, 30, 0.5, "")
    finally:
        slurm.scancel(name=job_name)
