"""The checkpoint watchdog's proof on the real local Slurm (3 nodes): three trainings submitted
with `rtool submit` (the shim writes their heartbeats), each broken its own way, watched by
one `rtool watch all` over three `[[watch.checkpoint]]` entries:

- one stops saving at step 30 and trains on: overdue by its own pace (steps);
- one dies in the middle of the save of step 20: that checkpoint is incomplete;
- one saves into a 10 MiB tmpfs until it is full: the folder will not hold the next save.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for
from tests.watchdogs.ckptfiles import WRITER

Cli = Callable[..., CliResult]


def _submit(cli: Cli, name: str, hb: Path, mp: pytest.MonkeyPatch, **env: str) -> str:
    for key, value in env.items():
        mp.setenv(key, value)
    res = cli(
        "submit",
        WRITER,
        "--job-name",
        name,
        "--heartbeat",
        str(hb),
        "--python",
        sys.executable,
        "--time",
        "0:10:00",
        "--no-requeue",
        "--parsable",
    )
    for key in env:
        mp.delenv(key)
    assert res.code == 0, res.err
    return res.out.strip().splitlines()[-1]


@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_three_broken_writers_on_the_cluster(
    cli: Cli,
    slurm: Slurm,
    slurm_cluster: control.Cluster,
    job_name: str,
    tmpfs: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    stops, dies, full = tmp_path / "stops", tmp_path / "dies", tmpfs("full", size="10M")
    common = {"CKW_SAVE_EVERY": "5", "CKW_STEPS": "3000", "CKW_STEP_SECONDS": "0.1"}
    jobs = [
        _submit(cli, job_name, stops / "hb.json", monkeypatch, **common, CKW_DIR=str(stops),
                CKW_STOP_SAVING_AT="30"),
        _submit(cli, job_name, dies / "hb.json", monkeypatch, **common, CKW_DIR=str(dies),
                CKW_PARTIAL_AT="20"),
        _submit(cli, job_name, tmp_path / "full-hb.json", monkeypatch, **common,
                CKW_DIR=str(full), CKW_SIZE=str(1536 * 1024)),
    ]  # fmt: skip
    config = tmp_path / "rtool.toml"
    entries = [
        (stops, f'heartbeat = "{stops / "hb.json"}"\nsettle = "2s"\nmax_age = "1h"'),
        (dies, 'marker = "{NAME}/COMPLETE"\nsettle = "2s"'),
        (full, 'settle = "2s"'),
    ]
    config.write_text(
        "".join(f'[[watch.checkpoint]]\npath = "{p}"\n{extra}\n' for p, extra in entries)
    )

    def sweep() -> dict[str, dict]:  # type: ignore[type-arg]
        res = cli("--config", str(config), "watch", "all", "--json", "--no-notify")
        doc = json.loads(res.out)
        return {Path(r["what"]).name: r for r in doc["results"]}

    def all_critical() -> dict[str, dict] | None:  # type: ignore[type-arg]
        found = sweep()
        settled = "newest complete" in found.get("dies", {}).get(
            "summary", ""
        )  # its last save seen
        return found if settled and all(r["status"] == "CRITICAL" for r in found.values()) else None

    try:
        found = wait_for(all_critical, timeout=150, interval=2, what="three CRITICAL results")
    finally:
        slurm.scancel(jobs)
    assert isinstance(found, dict)
    s = found["stops"]["summary"]
    assert "no complete checkpoint for" in s and "(a save every 5; newest step_000025" in s, s
    s = found["dies"]["summary"]
    assert "step_000020 incomplete: missing step_000020/COMPLETE; newest complete step_000015" in s
    s = found["full"]["summary"]
    assert "free, the next save needs ~2.2MiB" in s, s
