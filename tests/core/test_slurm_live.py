"""rtool's Slurm layer against the real local Slurm: RUNNING, PENDING with reason, arrays."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtool.core.slurm import Slurm, SlurmError, SlurmTimeout
from tests.helpers import wait_for

SLEEP = "#!/bin/bash\nsleep 60\n"


def _by_name(slurm: Slurm, name: str) -> list:
    return slurm.squeue(names=[name])


def test_running_held_and_array_tasks(slurm: Slurm, job_name: str, tmp_path: Path) -> None:
    running = slurm.sbatch(["-J", job_name, "-o", str(tmp_path / "r.out")], script=SLEEP).job_id
    held = slurm.sbatch(["-J", job_name, "--hold", "-o", "/dev/null"], script=SLEEP).job_id
    array = slurm.sbatch(["-J", job_name, "--array=1-3%1", "-o", "/dev/null"], script=SLEEP).job_id

    def settled() -> list | None:
        jobs = _by_name(slurm, job_name)
        states = {j.job_id: j for j in jobs}
        ok = (
            states.get(running)
            and states[running].state == "RUNNING"
            and f"{array}_1" in states
            and states[f"{array}_1"].state == "RUNNING"
        )
        return jobs if ok else None

    jobs = {j.job_id: j for j in wait_for(settled, 60, what="jobs to start")}  # type: ignore[union-attr]
    assert jobs[held].state == "PENDING" and jobs[held].reason == "JobHeldUser"
    pending = jobs[f"{array}_[2-3%1]"]
    assert pending.state == "PENDING" and pending.reason == "JobArrayTaskLimit"
    assert pending.pending_tasks == "2-3%1" and pending.array_job_id == array
    assert jobs[f"{array}_1"].array_task == "1"

    rec = slurm.show_job(running)[0]
    assert rec["JobState"] == "RUNNING" and rec["JobName"] == job_name
    assert "EndTime" in rec


def test_dependency_pending_reason(slurm: Slurm, job_name: str) -> None:
    first = slurm.sbatch(["-J", job_name, "-o", "/dev/null"], script=SLEEP).job_id
    second = slurm.sbatch(
        ["-J", job_name, f"--dependency=afterany:{first}", "-o", "/dev/null"], script=SLEEP
    ).job_id

    def reason() -> str | None:
        jobs = slurm.squeue(job_ids=[second])
        return jobs[0].reason if jobs and jobs[0].reason == "Dependency" else None

    wait_for(reason, 30, what="the Dependency pending reason")
    assert slurm.squeue(job_ids=[second])[0].state == "PENDING"


def test_finished_job_is_gone_not_an_error(slurm: Slurm) -> None:
    assert slurm.squeue(job_ids=["999999"]) == []
    assert slurm.show_job("999999") == []


def test_unreachable_slurm_is_an_error_not_empty(
    slurm: Slurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        Path(__import__("os").environ["SLURM_CONF"])
        .read_text()
        .replace("SlurmctldPort=", "SlurmctldPort=1#")
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    with pytest.raises(SlurmError):
        Slurm(timeout=20).squeue()


def test_hanging_slurm_command_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "squeue"
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    with pytest.raises(SlurmTimeout):
        Slurm(timeout=0.5).squeue()
