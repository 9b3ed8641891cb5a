"""Proof on the 3-node local cluster (n1..n3, accounting): a pre-flight failing only on n2
sends the attempt away from n2; a node failing under a run becomes suspect and is excluded."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rtool.core.slurm import Slurm, expand_hostlist
from tests.helpers import wait_for

FAKE_SMI = """#!/bin/bash
# nvidia-smi stand-in: n2 lost GPU 3, every other node is a healthy 8-GPU node
case "$1" in *ecc*) for i in 0 1 2 3 4 5 6 7; do echo "$i, 0, [N/A], No, No"; done; exit 0 ;; esac
lost="Unable to determine the device handle for GPU0000:5D:00.0: Unknown Error"
[ "$SLURMD_NODENAME" = n2 ] && echo "$lost"
for i in 0 1 2 3 4 5 6 7; do
    [ "$SLURMD_NODENAME" = n2 ] && [ $i = 3 ] && continue
    echo "$i, 00000000:1$i:00.0, NVIDIA H100 80GB HBM3, GPU-$i"
done
"""

CONFIG = """
[nodes]
max_excluded = "50%"
[nodes.preflight]
gpus = 8
check_timeout = "10s"
[notify]
[notify.log]
path = "{alerts}"
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rtool.toml").write_text(CONFIG.format(alerts=tmp_path / "alerts.log"))
    return tmp_path


def _nodes_of(slurm: Slurm, job_id: str) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(r.job_id, r.state, r.nodes) for r in slurm.sacct(job_ids=[job_id])]


def _submit(cli: Any, job_name: str, *flags: str) -> str:
    """`rtool submit job.slurm` as JOB_NAME for 20 minutes with `flags`: its job id."""
    res = cli(
        "submit", "job.slurm", "--job-name", job_name, "--time", "20:00", "--parsable", *flags
    )
    assert res.code == 0, res.err
    return str(res.out.strip())


def _running(slurm: Slurm, job_name: str) -> Any:
    """The running job named JOB_NAME, or None."""
    return next((j for j in slurm.squeue(names=[job_name]) if j.state == "RUNNING"), None)


def test_preflight_failure_on_n2_requeues_away(slurm_cluster, slurm, job_name, workdir, cli):
    Path("job.slurm").write_text('#!/bin/bash\necho "trained on $SLURMD_NODENAME"\n')
    for n in ("n1", "n3"):  # the first attempt can only land on n2
        slurm_cluster.drain_node(n, "rtool test: keep n2 first")
    try:
        job_id = _submit(cli, job_name, "--array", "1-2%1")
        wait_for(
            lambda: any(r[2] == ("n2",) for r in _nodes_of(slurm, job_id)),
            timeout=60,
            what="the first attempt on n2",
        )
    finally:
        for n in ("n1", "n3"):
            slurm.scontrol("update", f"nodename={n}", "state=resume")
    wait_for(
        lambda: [r[1] for r in _nodes_of(slurm, job_id)].count("COMPLETED") == 2,
        timeout=120,
        what="both tasks to complete",
    )
    attempts = _nodes_of(slurm, job_id)
    done = [r for r in attempts if r[1] == "COMPLETED"]
    assert all(r[2] and r[2][0] in ("n1", "n3") for r in done), attempts
    assert len(attempts) == 3, attempts  # task 1 requeued once (on n2), then 2 completions
    out = Path(f"{job_name}-{job_id}_1.out").read_text()  # the attempt after the requeue
    assert "trained on n1" in out or "trained on n3" in out, out

    shown = json.loads(cli("nodes", "--json", "--no-refresh").out)["suspects"]
    assert [s["node"] for s in shown] == ["n2"]
    [evidence] = shown[0]["evidence"]
    assert evidence["kind"] == "preflight" and evidence["run"] == job_name
    assert evidence["detail"].startswith("gpus: 7 GPUs visible, 8 requested")
    alerts = (workdir / "alerts.log").read_text()
    assert "pre-flight failed on n2" in alerts and "requeued away from n2" in alerts, alerts
    assert "Unable to determine" in alerts  # the output of the check
    text = cli("nodes", "--no-refresh").out
    assert text.startswith("n2  suspect since") and "preflight job " in text

    status = cli("status")
    assert "NODES" in status.out and "n2  preflight: gpus: 7 GPUs visible" in status.out

    again = cli("submit", "job.slurm", "--job-name", job_name, "--dry-run")
    assert again.code == 0 and "#SBATCH --exclude=n2" in again.out
    assert "excluding suspect node(s) n2" in again.err
    assert cli("nodes", "forget", "n2").out == "n2 is no longer suspect\n"
    assert "--exclude" not in cli("submit", "job.slurm", "--job-name", job_name, "--dry-run").out


def test_node_failed_mid_run_is_excluded_from_next_attempt(
    slurm_cluster, slurm, job_name, workdir, cli
):
    Path("rtool.toml").write_text('[nodes]\nmax_excluded = "50%"\n')
    Path("job.slurm").write_text("#!/bin/bash\nsleep 30\n")
    job_id = _submit(cli, job_name, "--array", "1-2%1", "--requeue")
    running = wait_for(
        lambda: _running(slurm, job_name),
        timeout=60,
        what="the first attempt to run",
    )
    node = running.nodelist
    slurm_cluster.fail_node(node, "rtool test: GPU fell off the bus")
    try:
        wait_for(
            lambda: any(r[1] == "NODE_FAIL" for r in _nodes_of(slurm, job_id)),
            timeout=60,
            what="the NODE_FAIL record",
        )
        watch = cli("watch", "job", "--name", job_name, "--no-notify")
        assert watch.code == 1, watch.out
        assert f"node {node} failed under attempt {job_id}_1 (NODE_FAIL" in watch.out
        # (other tests of the session fail nodes too: their NODE_FAIL records are in sacct)
        shown = {s["node"]: s for s in json.loads(cli("nodes", "--json").out)["suspects"]}
        assert node in shown and job_name in shown[node]["runs"], shown
        excluded = {
            r.get("ExcNodeList") for r in slurm.show_job(job_id) if r.get("JobState") == "PENDING"
        }
        assert any(node in expand_hostlist(e or "") for e in excluded), slurm.show_job(job_id)
    finally:
        slurm_cluster.revive_node(node)
    nxt = wait_for(
        lambda: _running(slurm, job_name),
        timeout=90,
        what="the next attempt to run",
    )
    assert nxt.nodelist != node
    slurm.scancel([job_id])


def test_drained_node_under_a_pending_and_a_running_job(
    slurm_cluster, slurm, job_name, workdir, cli
):
    Path("rtool.toml").write_text(f'[[watch.job]]\nname = "{job_name}"\n')
    Path("job.slurm").write_text("#!/bin/bash\nsleep 60\n")
    slurm_cluster.drain_node("n3", "GPU 3 ECC errors")
    try:
        _submit(cli, job_name, "--", "--nodelist=n3")
        wait_for(  # 22.05 names n3 in the reason, 24.11 does not (docs/slurm-releases.md)
            lambda: any(
                (j.reason or "").startswith("ReqNodeNotAvail")
                for j in slurm.squeue(names=[job_name])
            ),
            timeout=30,
            what="the job to pend on n3",
        )
        watch = cli("watch", "job", "--name", job_name, "--no-notify")
        assert watch.code == 1, watch.out  # was JOB OK
        assert "on unavailable node(s): n3 drained (GPU 3 ECC errors)" in watch.out
        status = json.loads(cli("status", "--json").out)
        [entry] = status["jobs"]["watched"]
        assert entry["status"] == "WARNING" and "n3 drained (GPU 3 ECC errors)" in entry["summary"]
        [suspect] = json.loads(cli("nodes", "--json", "--no-refresh").out)["suspects"]
        assert suspect["node"] == "n3" and suspect["why"] == "drain: drained: GPU 3 ECC errors"
        assert cli("nodes", "forget", "n3").code == 0
    finally:
        slurm.scontrol("update", "nodename=n3", "state=resume")
    wait_for(
        lambda: _running(slurm, job_name),
        timeout=60,
        what="the job to run on n3",
    )
    slurm_cluster.drain_node("n3", "maintenance at noon")
    try:
        watch = cli("watch", "job", "--name", job_name, "--no-notify")
        assert watch.code == 1, watch.out
        assert "node n3 draining (maintenance at noon)" in watch.out, watch.out
    finally:
        slurm.scontrol("update", "nodename=n3", "state=resume")
        slurm.scancel(name=job_name)


def test_a_run_pending_on_a_drained_node_is_protected_whatever_the_reason_says(
    slurm_cluster, slurm, job_name, workdir, cli
):
    """The nodes a pending job waits for come from what it asked for and sinfo, not from the
    reason text (24.11 says `ReqNodeNotAvail, May be reserved for other job`, no node name):
    the drained node it requires becomes a suspect, is excluded from the run's other pending
    jobs (a held array), and the note names it alone (n1, drained too but not asked for, is not
    in it; the old fallback listed every bad node of the partition)."""
    Path("rtool.toml").write_text(
        f'[nodes]\nmax_excluded = "50%"\n[[watch.job]]\nname = "{job_name}"\n'
    )
    Path("job.slurm").write_text("#!/bin/bash\nsleep 60\n")
    slurm_cluster.drain_node("n3", "GPU 3 ECC errors")
    slurm_cluster.drain_node("n1", "maintenance")
    try:
        _submit(cli, job_name, "--", "--nodelist=n3")
        array = _submit(cli, job_name, "--array", "1-3%1", "--", "--hold")  # the run's next tasks
        wait_for(
            lambda: any(
                (j.reason or "").startswith("ReqNodeNotAvail")
                for j in slurm.squeue(names=[job_name])
            ),
            timeout=60,
            what="the --nodelist=n3 job to pend on n3",
        )
        watch = cli("watch", "job", "--name", job_name, "--no-notify")
        assert watch.code == 1, watch.out
        assert "on unavailable node(s): n3 drained (GPU 3 ECC errors)" in watch.out, watch.out
        assert "n1" not in watch.out, watch.out
        suspects = json.loads(cli("nodes", "--json", "--no-refresh").out)["suspects"]
        assert [s["node"] for s in suspects] == ["n3"], suspects
        pending = [r for r in slurm.show_job(array) if r["JobState"] == "PENDING"]
        assert pending and all(r["ExcNodeList"] == "n3" for r in pending), pending
    finally:
        slurm.scancel(name=job_name)
        for node in ("n1", "n3"):
            slurm.scontrol("update", f"nodename={node}", "state=resume")
        cli("nodes", "forget", "n3")


def test_default_caps_keep_a_two_node_job_off_one_bad_node_of_three(
    slurm_cluster, job_name, tmp_path, monkeypatch, cli
):
    """Issue 35.8: with the old defaults (25 %, min_left 1) a 2-node job on 3 nodes could
    exclude nothing, silently; a suspect kept by the limits is named with the limit."""
    import time

    from rtool.core.state import StateDir
    from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore

    monkeypatch.chdir(tmp_path)
    Path("job.slurm").write_text("#!/bin/bash\nsrun true\n")
    store = SuspectStore(StateDir(), expiry=3600)
    store.record("n2", Evidence(EvidenceKind.PREFLIGHT, "gpus: 7 GPUs visible", time.time()))
    res = cli("submit", "job.slurm", "--job-name", job_name, "--nodes", "2", "--dry-run")
    assert res.code == 0 and "#SBATCH --exclude=n2" in res.out, res.err
    assert "rtool: excluding suspect node(s) n2 (rtool nodes)" in res.err
    Path("rtool.toml").write_text("[nodes]\nmin_left = 1\n")
    res = cli("submit", "job.slurm", "--job-name", job_name, "--nodes", "2", "--dry-run")
    assert res.code == 0 and "--exclude" not in res.out
    assert "rtool: warning: not excluding suspect node(s) n2 of partition " in res.err
    assert (
        ": the job needs 2 of the partition's 3 node(s) and [nodes] min_left 1 more stay free: "
        "0 may be excluded in all\n"
    ) in res.err, res.err
    Path("rtool.toml").write_text('[nodes]\nmax_excluded = "25%"\n')
    res = cli("submit", "job.slurm", "--job-name", job_name, "--nodes", "2", "--dry-run")
    assert "[nodes] max_excluded 25% of the partition's 3 node(s) allows 0 excluded in all" in (
        res.err
    ), res.err
