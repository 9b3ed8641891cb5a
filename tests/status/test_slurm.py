"""`rtool status` on the real local Slurm: a watched job submitted with `rtool submit`, a cron
chain started and ticked for real with a failing job, one squeue call for both; then slurmctld
unreachable: those sections UNKNOWN, the rest still shown."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtool.core.slurm import Slurm
from rtool.cron.store import chain_name, resolve_dir
from tests.helpers import wait_for
from tests.status.conftest import Setup

pytestmark = pytest.mark.slurm

FAIL = "#!/bin/sh\necho 'checkpoint folder missing' >&2\nexit 3\n"


@pytest.fixture
def cron_chain(tmp_path: Path, slurm: Slurm) -> Iterator[str]:
    """The chain name of `<tmp>/cron` (the folder the setup's config names); cancelled after."""
    name = chain_name(resolve_dir(tmp_path / "cron"))
    yield name
    with contextlib.suppress(Exception):
        slurm.scancel(name=name)


@contextlib.contextmanager
def unreachable(conf: Path) -> Iterator[None]:
    """Point SLURM_CONF at `conf` for a moment (restored before any fixture cleans up)."""
    old = os.environ["SLURM_CONF"]
    os.environ["SLURM_CONF"] = str(conf)
    try:
        yield
    finally:
        os.environ["SLURM_CONF"] = old


def _start_cron_with_a_failing_job(s: Setup) -> None:
    assert s.run("cron", "init").code == 0
    script = s.dir / "cron" / "cron.hourly" / "fail.sh"
    script.write_text(FAIL)
    script.chmod(0o755)
    assert s.run("cron", "run", "fail.sh").code == 1  # recorded and alerted (cron:...)
    assert s.run("cron", "start").code == 0


def test_jobs_cron_chain_and_switches_from_one_squeue_call(
    make_setup, slurm: Slurm, job_name: str, cron_chain: str
):
    s: Setup = make_setup(
        f'[[watch.job]]\nname = "{job_name}"\n'
        f'[[watch.log]]\npath = "train.log"\njob_name = "{job_name}-next"\n'
    )
    Path("job.slurm").write_text("#!/bin/bash\nsleep 120\n")
    res = s.run("submit", "job.slurm", "--job-name", job_name, "--time", "20:00", "--parsable")
    assert res.code == 0, res.err
    job_id = res.out.strip()
    _start_cron_with_a_failing_job(s)
    assert s.run("cron", "tick").code == 0  # a real tick: heartbeat, the chain stays queued
    wait_for(
        lambda: any(j.state == "RUNNING" for j in slurm.squeue(names=[job_name])),
        timeout=60,
        what="the watched job to run",
    )

    data = s.status()
    now = time.time()
    assert data["slurm"] == {"status": "OK", "squeue_calls": 1, "error": None}
    job, later = data["jobs"]["watched"]
    assert job["name"] == job_name and job["status"] == "OK"
    assert f"{job_name} running (job {job_id}" in job["summary"]
    assert [(j["job_id"], j["state"]) for j in job["jobs"]] == [(job_id, "RUNNING")]
    assert later["name"] == f"{job_name}-next" and later["status"] == "CRITICAL"
    assert "neither running nor queued" in later["summary"]

    cron = data["cron"]
    assert cron["started"] is True and cron["chain_name"] == cron_chain
    assert [j["state"] for j in cron["chain_jobs"]] == ["PENDING"]
    assert now - 60 < cron["last_tick"] <= now and cron["next_tick"] > now
    assert [(f["job"], f["status"], f["exit_code"]) for f in cron["failing"]] == [
        ("cron.hourly/fail.sh", "failed", 3)
    ]
    assert cron["chain_status"] == "OK" and cron["status"] == "WARNING"  # a job failed
    keys = {a["key"]: a["status"] for a in data["alerts"]["open"]}
    assert keys == {"cron:cron.hourly/fail.sh": "CRITICAL"}
    run = {"job_name": job_name, "job_id": job_id, "run": job_name}
    mine = [w for w in data["switches"]["switches"] if run in w["jobs"]]
    assert {(w["which"], w["present"]) for w in mine} == {("kill", False), ("save", False)}

    screen = s.screen()
    assert f"{job_name} running (job {job_id}" in screen
    assert f"chain:      {cron_chain}: job " in screen and " PENDING" in screen
    assert "failing:    cron.hourly/fail.sh: failed, exit 3" in screen
    assert "last tick:  20" in screen and "after its slot" in screen

    assert s.run("stop", "--job-name", job_name).code == 0  # the recorded kill switch
    mine = [w for w in s.status()["switches"]["switches"] if run in w["jobs"]]
    assert {(w["which"], w["present"]) for w in mine} == {("kill", True), ("save", False)}
    kill = Path.cwd() / f"kill-switch.{job_name}"  # the run's own
    assert f"kill  SET      {kill}  (rtool submit; {job_name} job {job_id})" in s.screen()


def test_slurm_unreachable_makes_jobs_and_chain_unknown_and_shows_the_rest(
    make_setup, slurm_cluster, job_name: str, cron_chain: str, tmp_path: Path
):
    s: Setup = make_setup(f'[[watch.job]]\nname = "{job_name}"\n')
    _start_cron_with_a_failing_job(s)
    bad = tmp_path / "unreachable.conf"
    text = slurm_cluster.conf.read_text().splitlines()
    bad.write_text(
        "\n".join("SlurmctldPort=1" if t.startswith("SlurmctldPort=") else t for t in text) + "\n"
    )
    with unreachable(bad):
        start = time.monotonic()
        data = s.status("--timeout", "2s")
        elapsed = time.monotonic() - start
        screen = s.screen("--timeout", "2s")
    assert elapsed < 15
    assert data["slurm"]["status"] == "UNKNOWN" and data["slurm"]["squeue_calls"] == 1
    assert data["slurm"]["error"].startswith("squeue: ")  # short: no long argv on the screen
    [job] = data["jobs"]["watched"]
    assert job["status"] == "UNKNOWN" and "squeue failed" in job["summary"]
    cron = data["cron"]
    assert cron["chain_status"] == "UNKNOWN" and cron["chain_jobs"] is None
    assert cron["status"] == "WARNING"  # the worst of: chain unknown, a job failing
    assert cron["started_at"] and cron["failing"]  # what the state dir knows is still shown
    assert [a["key"] for a in data["alerts"]["open"]] == ["cron:cron.hourly/fail.sh"]
    assert data["memory"]["total_bytes"] > 0 and data["switches"]["status"] == "OK"

    assert "JOBS      UNKNOWN    squeue failed: " in screen
    assert f"chain:      {cron_chain}: UNKNOWN (squeue failed: " in screen
    assert "cron:cron.hourly/fail.sh since " in screen and "OUTBOX    OK" in screen
