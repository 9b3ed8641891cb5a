"""NODE_FAIL attempts (from sacct -D) as evidence against the node that failed.

A one-node attempt blames its node. A multi-node attempt blames the nodes Slurm now shows down
or drained (the one that failed); when none is, every node of the attempt.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from rtool.core.slurm import Slurm, SlurmError
from rtool.core.slurm.nodes import NodeState
from rtool.core.slurm.sacct import SacctRecord
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore


@dataclass(frozen=True)
class NodeFail:
    """One failed node of one attempt."""

    node: str
    record: SacctRecord
    reason: str | None  # Slurm's reason for the node, when it has one

    def evidence(self) -> Evidence:
        r = self.record
        why = f" ({self.reason})" if self.reason else ""
        detail = f"attempt {r.job_id} ended NODE_FAIL on {self.node}{why}"
        when = r.end or r.start or time.time()
        return Evidence(EvidenceKind.NODE_FAIL, detail, when, r.name, r.job_id)


def node_fails(records: Iterable[SacctRecord], states: list[NodeState]) -> list[NodeFail]:
    """Pure: the failed nodes of the NODE_FAIL attempts in `records`."""
    by_node = {s.name: s for s in states}
    out = []
    for r in records:
        if r.state != "NODE_FAIL" or not r.nodes:
            continue
        bad = [n for n in r.nodes if n in by_node and by_node[n].is_bad]
        for node in bad if (len(r.nodes) > 1 and bad) else r.nodes:
            state = by_node.get(node)
            out.append(NodeFail(node, r, state.reason if state else None))
    return out


def record_node_fails(
    slurm: Slurm,
    store: SuspectStore,
    *,
    names: list[str] | None,
    window: float,
    records: list[SacctRecord] | None = None,
) -> list[NodeFail]:
    """Look for NODE_FAIL attempts (of `names`, else of all your jobs) within `window` seconds
    and record them; returns the ones that were new. Raises SlurmError when sacct fails."""
    if records is None:
        records = slurm.sacct(names=names or (), since=time.time() - window)
    failed = [r for r in records if r.state == "NODE_FAIL"]
    if not failed:
        return []
    try:
        states = slurm.sinfo_nodes()
    except SlurmError:
        states = []
    return [f for f in node_fails(failed, states) if store.record(f.node, f.evidence())]
