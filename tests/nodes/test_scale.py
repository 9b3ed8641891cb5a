"""At scale, on a real 64-node local cluster (`scripts/local-slurm up --nodes 64`, started once
for this module, with accounting): a 16-node attempt that loses one node makes exactly that node
suspect, and the sweeps that keep many pending jobs off the suspects call Slurm only for what
changed.

Sweeps run in-process (the runner's `sweep`, as `rtool watch` runs it) so that every Slurm call
is counted (`Slurm.calls`); the suspects are read back with `rtool nodes --json`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.localslurm import control
from rtool.core.slurm import Slurm, expand_hostlist
from rtool.core.state import StateDir, default_state_dir
from rtool.nodes.config import NodesConfig
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore
from rtool.watchdogs.base import ProbeEnv
from rtool.watchdogs.config import JobWatch
from rtool.watchdogs.job import JobWatchdog
from rtool.watchdogs.runner import query_for, sweep
from tests.helpers import private_cluster, wait_for

NODES = 64


@pytest.fixture(scope="module")
def big() -> Iterator[control.Cluster]:
    """64 slurmd on this host (about 350 MiB), slurmctld, slurmdbd and MariaDB."""
    with private_cluster("rtool-slurm64-", "the 64-node local Slurm", nodes=NODES) as cluster:
        yield cluster


@pytest.fixture
def on_big(big: control.Cluster, monkeypatch: pytest.MonkeyPatch) -> control.Cluster:
    monkeypatch.setenv("SLURM_CONF", str(big.conf))
    return big


def submit(s: Slurm, name: str, *opts: str, body: str = "sleep 600") -> str:
    args = ["--job-name", name, "-o", "/dev/null", "--time=20:00", *opts]
    return s.sbatch(args, script=f"#!/bin/bash\n{body}\n").job_id


def sweep_once(wd: JobWatchdog, state: StateDir) -> tuple[list[Any], Counter[str]]:
    """One sweep; (its results, its Slurm calls by command: `squeue`, `scontrol update` ...)."""
    s = Slurm(timeout=30)
    results = sweep([wd], ProbeEnv(s, state, query_for([wd])), 60)
    calls = Counter(c[0] if c[0] != "scontrol" else " ".join(c[:2]) for c in s.calls)
    return results, calls


def excluded(s: Slurm, job_id: str) -> set[str]:
    """The nodes every pending record of the job excludes (one set: they must agree)."""
    lists = {r.get("ExcNodeList", "") for r in s.show_job(job_id) if r["JobState"] == "PENDING"}
    assert len(lists) == 1, lists
    return set(expand_hostlist(lists.pop()))


def test_a_16_node_attempt_losing_one_node_blames_that_node_alone(on_big, cli):
    """The old code blamed the attempt's nodes down *now*, else all of them, on every sweep:
    once the failed node was back, all 16 became suspects and the requeued attempt excluded
    them all."""
    name = f"rt-{uuid.uuid4().hex[:8]}"
    s = Slurm(timeout=30)
    job = submit(s, name, "--nodes=16", "--requeue")
    try:
        first = wait_for(
            lambda: next((j for j in s.squeue(names=[name]) if j.state == "RUNNING"), None),
            60,
            what="the 16-node attempt to run",
        )
        nodes = expand_hostlist(first.nodelist)
        assert len(nodes) == 16 and len(on_big.node_states()) == NODES
        victim = nodes[6]  # not the batch host: the attempt's other nodes run nothing
        on_big.fail_node(victim, "rtool test: GPU fell off the bus")
        try:
            wait_for(
                lambda: any(r.state == "NODE_FAIL" for r in s.sacct(job_ids=[job])),
                60,
                what="the NODE_FAIL record",
            )
            on_big.wait_job_state(job, ["PENDING"], 90)  # requeued
            s.hold(job)  # the next attempt waits until the exclusion is checked
        finally:
            on_big.revive_node(victim)  # back before rtool looks (ReturnToService)
        state = StateDir(default_state_dir())
        wd = JobWatchdog([JobWatch(name=name)])
        results, calls = sweep_once(wd, state)
        [failed] = [r for r in results if "NODE_FAIL" in r.summary]
        assert failed.what == f"{name}@{victim}" and f"node {victim} failed" in failed.summary
        shown = json.loads(cli("nodes", "--json", "--no-refresh").out)["suspects"]
        assert [x["node"] for x in shown] == [victim], shown  # the other 15 are not suspect
        assert excluded(s, job) == {victim}  # the 15 healthy nodes stay free to use
        assert calls["squeue"] == 1 and calls["scontrol update"] == 1
        assert calls["sacct"] <= 2  # 2 once per state dir on 22.05: it has no FailedNode field

        results, calls = sweep_once(wd, state)  # judged once: nothing is asked again
        assert set(calls) == {"squeue", "sinfo", "sacct"} and max(calls.values()) == 1, calls
        assert [x["node"] for x in json.loads(cli("nodes", "--json").out)["suspects"]] == [victim]

        s.release(job)
        nxt = wait_for(
            lambda: next((j for j in s.squeue(names=[name]) if j.state == "RUNNING"), None),
            90,
            what="the next attempt to run",
        )
        again = set(expand_hostlist(nxt.nodelist))
        assert victim not in again and len(again) == 16
    finally:
        s.scancel(name=name)


def test_pending_jobs_follow_the_suspects_at_the_cost_of_what_changed(on_big, tmp_path):
    """20 watched names, 41 pending jobs (one an array of 50 tasks, one with its own
    --exclude): a sweep touches a job only when the suspect set changed; then one `scontrol
    show job` and one `scontrol update` with the compressed list. Nothing changed: no call
    beyond squeue, sinfo and sacct. Expired or forgotten suspects leave the lists again; the
    user's own exclusion stays."""
    base = f"rt-{uuid.uuid4().hex[:6]}"
    names = [f"{base}-{i}" for i in range(20)]
    s = Slurm(timeout=30)
    jobs = [submit(s, n, "--hold") for n in names for _ in range(2)]
    array = submit(s, names[0], "--hold", "--array=1-50%1")
    own = submit(s, names[1], "--hold", "--exclude=n64")
    try:
        state = StateDir(tmp_path / "state")
        store = SuspectStore(state)
        wd = JobWatchdog([JobWatch(name=n) for n in names])
        wd.nodes_cfg = NodesConfig()  # 50% of 64: room for 32
        now = time.time()
        for node, age in (("n5", 60), ("n9", 30)):
            store.record(node, Evidence(EvidenceKind.PREFLIGHT, "gpus: 7 of 8", now - age))

        _, calls = sweep_once(wd, state)
        targets = len(jobs) + 2
        assert calls["scontrol update"] == targets and calls["scontrol show"] == targets
        assert all(excluded(s, j) == {"n5", "n9"} for j in [*jobs, array])
        assert excluded(s, own) == {"n5", "n9", "n64"}
        raw = s.show_job(array)[0]["ExcNodeList"]
        assert raw == "n[5,9]"  # Slurm's compressed form

        _, calls = sweep_once(wd, state)
        assert calls == Counter({"squeue": 1, "sinfo": 1, "sacct": 1}), calls

        store.record("n11", Evidence(EvidenceKind.PREFLIGHT, "gpus: 6 of 8", time.time()))
        _, calls = sweep_once(wd, state)
        assert calls["scontrol update"] == targets
        assert all(excluded(s, j) == {"n5", "n9", "n11"} for j in jobs)

        store.forget("n5")
        _, calls = sweep_once(wd, state)
        assert calls["scontrol update"] == targets
        assert all(excluded(s, j) == {"n9", "n11"} for j in [*jobs, array])
        assert excluded(s, own) == {"n9", "n11", "n64"}  # the user's own stays

        _, calls = sweep_once(wd, state)
        assert calls == Counter({"squeue": 1, "sinfo": 1, "sacct": 1}), calls
        kept = json.loads((state.path / "nodes" / "exclusions.json").read_text())["jobs"][array]
        assert (kept["suspects"], kept["ours"]) == ("n[9,11]", "n[9,11]")
    finally:
        for n in names:
            s.scancel(name=n)
