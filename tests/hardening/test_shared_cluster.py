"""Issue 25 part A, findings 1 and 9: another user's jobs never steer your run.

A second Unix user (`rtool-peer`, made by the session fixture `peer`) submits jobs of the same
name as yours on the real local cluster. The tests run as root, so Slurm itself would let rtool
hold, requeue, cancel and update their jobs: only rtool's own scoping stops it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from devtools.localslurm.control import Cluster
from devtools.localslurm.users import LocalUser
from rtool.core.slurm import ForeignJob, Slurm
from tests.conftest import CliResult
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm
Cli = Callable[..., CliResult]
SLEEP = "#!/bin/bash\nsleep 300\n"
FAIL = "#!/bin/bash\nexit 1\n"
HELD = ("JobHeldUser", "JobHeldAdmin")


@dataclass
class Other:
    """The other user's side: their jobs, submitted and cancelled as them."""

    user: LocalUser
    folder: Path
    names: set[str] = field(default_factory=set)

    def sbatch(self, name: str, *args: str, script: str = FAIL) -> str:
        argv = ["sbatch", "--parsable", f"--job-name={name}", f"--output={self.folder}/%j.out"]
        res = self.user.run([*argv, *args], cwd=self.folder, input=script)
        self.names.add(name)
        return res.stdout.strip().split(";")[0]

    def states(self, job_id: str, name: str) -> list[str]:
        """Their tasks' states as accounting has them under `name` (asked as them; slurmdbd
        may record a job's name a little after its state)."""
        argv = ["sacct", "-X", "-D", "-n", "-P", f"--jobs={job_id}", "--format=State,JobName"]
        out = self.user.run(argv).stdout
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        return [row[0].split()[0] for row in rows if row[-1] == name]


@pytest.fixture
def other(peer_cluster: LocalUser) -> Iterator[Other]:
    o = Other(peer_cluster, peer_cluster.folder("jobs-"))
    yield o
    for name in o.names:
        o.user.run(["scancel", f"--name={name}"], check=False)
    o.user.remove(o.folder)


def submit_ours(slurm: Slurm, name: str, out: Path, *args: str, script: str = SLEEP) -> str:
    argv = [f"--job-name={name}", f"--output={out}/%j.out", *args]
    return slurm.sbatch(argv, script=script).job_id


def running(slurm: Slurm, name: str, everyone: bool = False) -> bool:
    return any(j.state == "RUNNING" for j in slurm.squeue(names=[name], all_users=everyone))


def reasons(slurm: Slurm, job_id: str) -> list[str]:
    return [r.get("Reason", "") for r in slurm.show_job(job_id)]


def test_a_same_named_crash_loop_of_another_user_does_not_move_your_run(
    cli: Cli, slurm: Slurm, job_name: str, other: Other, tmp_path: Path
) -> None:
    theirs = other.sbatch(job_name, "--array=1-20%1")  # every task fails at once
    ours = submit_ours(slurm, job_name, tmp_path, "--array=1-3%1")
    wait_for(lambda: running(slurm, job_name), 90, what="our first task running")
    wait_for(
        lambda: other.states(theirs, job_name).count("FAILED") >= 3, 120, what="their tasks failing"
    )
    res = cli("watch", "run", job_name, "--no-notify")
    assert res.code == 0, res.out + res.err  # no alert: their failures are not our attempts
    assert "crash loop" not in res.out and f"running (job {ours}_1" in res.out
    assert "1 attempt(s) so far" in res.out
    assert not any(r in HELD for r in reasons(slurm, ours))  # ours not held
    assert not any(r in HELD for r in reasons(slurm, theirs))  # nor theirs (we are root)
    hist = cli("history", job_name, "--json")
    attempts = json.loads(hist.out)["ledger"]["attempts"]
    assert [a["job_id"] for a in attempts] == [f"{ours}_1"]


def test_watch_job_is_not_ok_because_another_user_runs_the_name(
    cli: Cli, slurm: Slurm, job_name: str, other: Other, peer_cluster: LocalUser
) -> None:
    theirs = other.sbatch(job_name, script=SLEEP)
    wait_for(lambda: running(slurm, job_name, everyone=True), 90, what="their job running")
    res = cli("watch", "job", "--name", job_name, "--no-notify")
    assert res.code == 2, res.out + res.err
    assert f"{job_name} neither running nor queued" in res.out
    watched = cli("watch", "job", "--name", job_name, "--user", peer_cluster.name, "--no-notify")
    assert watched.code == 0 and f"running (job {theirs}" in watched.out  # read-only watch


def test_another_users_held_job_does_not_hide_exhausted(
    cli: Cli, slurm: Slurm, job_name: str, other: Other, tmp_path: Path
) -> None:
    ours = submit_ours(slurm, job_name, tmp_path, script="#!/bin/bash\nexit 3\n")

    def ended() -> bool:  # by name: slurmdbd may record the name a little after the state
        recs = slurm.sacct(names=[job_name], since=time.time() - 600)
        return any(r.state == "FAILED" and r.job_id == ours for r in recs)

    wait_for(ended, 90, what="our only attempt failing in accounting")
    other.sbatch(job_name, "--hold", script=SLEEP)
    res = cli("watch", "run", job_name, "--no-notify")
    assert res.code == 2, res.out + res.err
    assert f"RUN CRITICAL - {job_name} exhausted without finished()" in res.out


def test_no_action_of_rtool_touches_another_users_job_even_as_root(
    slurm: Slurm, job_name: str, other: Other
) -> None:
    pending = other.sbatch(job_name, "--begin=now+3600", script=SLEEP)
    held = other.sbatch(job_name, "--hold", script=SLEEP)
    actions = {
        "hold": lambda: slurm.hold(pending),
        "requeue": lambda: slurm.requeue(pending),
        "requeuehold": lambda: slurm.requeue(pending, hold=True),
        "release": lambda: slurm.release(held),
        "scontrol hold": lambda: slurm.scontrol("hold", pending),
        "update": lambda: slurm.scontrol("update", f"JobId={pending}", "TimeLimit=1"),
        "exclude": lambda: slurm.set_excluded(pending, ["n1"]),
        "cancel": lambda: slurm.scancel([pending]),
        "signal": lambda: slurm.scancel([pending], signal="USR1", full=True),
        "cancel their name": lambda: slurm.scancel(name=job_name, user=other.user.name),
    }
    for what, act in actions.items():
        with pytest.raises(ForeignJob, match=r"not (to you|your jobs)"):
            act()
            pytest.fail(f"{what} acted on another user's job")
    slurm.scancel(name=job_name)  # by name: only ours (there are none)
    (rec,) = slurm.show_job(pending)
    assert rec["JobState"] == "PENDING" and rec["Reason"] == "BeginTime"
    assert rec["ExcNodeList"] == "(null)" and rec["Restarts"] == "0"
    assert rec["TimeLimit"] != "00:01:00"
    assert reasons(slurm, held) == ["JobHeldUser"]
    assert rec["UserId"] == f"{other.user.name}({other.user.uid})"


@pytest.mark.timeout(300)
def test_another_users_node_fail_makes_no_suspect_of_yours(
    cli: Cli, slurm: Slurm, slurm_cluster: Cluster, job_name: str, other: Other, tmp_path: Path
) -> None:
    theirs = other.sbatch(job_name, "--nodelist=n3", "--no-requeue", script=SLEEP)
    ours = submit_ours(slurm, job_name, tmp_path, "--begin=now+3600")  # pending: excludable
    wait_for(lambda: running(slurm, job_name, everyone=True), 90, what="their job on n3")
    slurm_cluster.fail_node("n3", "rtool test: their node failure")
    try:
        wait_for(lambda: "NODE_FAIL" in other.states(theirs, job_name), 90, what="their NODE_FAIL")
        res = cli("watch", "job", "--name", job_name, "--no-notify")
        assert f"attempt {theirs}" not in res.out and f"{job_name}@n3" not in res.out, res.out
        assert slurm.show_job(ours)[0]["ExcNodeList"] == "(null)"  # nothing excluded
        nodes = cli("nodes", "--json")
        assert nodes.code == 0, nodes.err
        assert f"attempt {theirs} " not in nodes.out  # their NODE_FAIL is no evidence of ours
    finally:
        slurm_cluster.revive_node("n3")
