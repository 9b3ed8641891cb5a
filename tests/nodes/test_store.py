"""The suspect store (expiry, forget, dedup), the exclusion cap, and the node parsers."""

from __future__ import annotations

import time

from rtool.core.slurm.nodes import parse_sinfo_nodes, waits_for_nodes
from rtool.core.state import StateDir
from rtool.nodes.exclude import Cap, plan
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore

SINFO = """n1|debug*|idle|Unknown|Unknown|none
n2|debug*|drained|2026-11-23T14:59:27|root|GPU 3 ECC errors
n3|debug*|down*|2026-11-23T15:01:00|slurm|Not responding
n4|gpu|mixed+drain|2026-11-23T15:02:00|alice|IB link flapping | port 2
"""


def ev(kind=EvidenceKind.PREFLIGHT, detail="gpus: 7 GPUs visible, 8 requested", t=None, **kw):
    return Evidence(kind, detail, time.time() if t is None else t, **kw)


def test_record_dedup_expiry_and_forget(tmp_path):
    store = SuspectStore(StateDir(tmp_path / "s"), expiry=3600)
    assert store.record("n2", ev(run="llama", job_id="12_3", t=time.time() - 60))
    assert not store.record("n2", ev(run="llama", job_id="12_3", t=time.time() - 60))
    assert store.record("n2", ev(EvidenceKind.NODE_FAIL, "attempt 12_4 ended NODE_FAIL", run="b"))
    assert not store.record("n9", ev(t=time.time() - 7200))  # already expired
    assert not store.record("-x", ev())  # not a node name
    [s] = store.suspects()
    assert s.node == "n2" and s.runs == ["b", "llama"] and s.why.startswith("node_fail:")
    assert s.to_json(3600)["expires"] > time.time() + 3500
    assert SuspectStore(store.state, expiry=30).suspects() != []  # the newest is recent
    assert store.forget("n2") and store.suspects() == []
    assert not store.record("n2", ev(run="llama", job_id="12_3", t=time.time() - 60))  # old
    assert store.record("n2", ev(job_id="12_5"))  # new evidence after forget counts
    assert not store.forget("n7")


def test_cap_never_excludes_the_whole_partition():
    nodes = [f"n{i}" for i in range(1, 9)]
    p = plan(["n3", "n5", "n7", "x9"], ["n1"], nodes, 1, Cap(max_excluded=25))
    assert p.excluded == ["n1", "n3"] and p.added == ["n3"]
    assert p.skipped == ["n5", "n7"] and p.outside == ["x9"]
    assert Cap(100, 1).allowed(3, 1) == 1  # 3 nodes, 1 needed, 1 left over
    assert Cap(50, 1).allowed(3, 2) == 0
    # the defaults (issue 35.8): a 2-node job off 1 bad node of 3, a 1-node job off 1 of 2
    assert Cap().allowed(3, 2) == 1 and Cap().allowed(2, 1) == 1 and Cap().allowed(2, 2) == 0
    kept = plan(["n2", "n3"], [], ["n1", "n2", "n3"], 2, Cap())
    assert kept.added == ["n2"] and kept.skipped == ["n3"]
    assert kept.why == "the job needs 2 of the partition's 3 node(s): 1 may be excluded in all"
    assert plan(["n2"], [], ["n1", "n2", "n3"], 1, Cap(50, 1)).excluded == ["n2"]
    assert plan(["n1", "n2"], [], ["n1", "n2"], 1, Cap(100, 1)).added == []
    required = plan(["n2"], [], ["n1", "n2", "n3"], 1, Cap(50, 1), required=["n2"])
    assert required.added == [] and required.outside == ["n2"]  # --nodelist=n2: keep it


def test_sinfo_and_pending_reasons():
    states = {s.name: s for s in parse_sinfo_nodes(SINFO)}
    assert not states["n1"].is_bad and states["n1"].reason is None
    assert states["n2"].is_bad and states["n2"].describe() == "n2 drained (GPU 3 ECC errors)"
    assert states["n2"].partition == "debug" and states["n2"].reason_time is not None
    assert states["n3"].is_bad and states["n4"].is_bad
    assert states["n4"].reason == "IB link flapping | port 2"
    assert waits_for_nodes("ReqNodeNotAvail, UnavailableNodes:n3")  # 22.05
    assert waits_for_nodes("ReqNodeNotAvail, May be reserved for other job")  # 24.11
    assert not waits_for_nodes("Resources")
    assert waits_for_nodes("Nodes required for job are DOWN, DRAINED or reserved for jobs")
    assert not waits_for_nodes("Priority") and not waits_for_nodes(None)


def test_signature_blames_the_node():
    from rtool.nodes.node_fault import blamed

    assert blamed(("n2",), "xid", "NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus") == [
        "n2"
    ]
    line = "[Rank 3] Watchdog caught collective operation timeout ... peer n12 (n12.cluster)"
    assert blamed(("n1", "n12"), "nccl-timeout", line) == []  # the waiting rank's (issue 37)
    # the node the root cause was printed on, when the log says (a per-task log, a host prefix)
    assert blamed(("n1", "n2"), "ecc", "CUDA error: uncorrectable ECC error", "n2") == ["n2"]
    assert blamed(("n1", "n2"), "xid", "NVRM: Xid 79") == []  # which node? nobody
    assert blamed(("n1",), "cuda-oom", "CUDA out of memory") == []  # the training's fault
