"""NODE_FAIL attempts: which node failed, in Slurm's own words, judged once per attempt.

A NODE_FAIL attempt blames only the node(s) Slurm recorded as failed, never the whole
attempt, and never from what the nodes look like later. In this order:

1. `FailedNode`: what slurmctld recorded for the attempt (sacct's field, Slurm 24.11 and newer);
2. slurmdbd's node events (`sacctmgr list events`, both releases): the attempt's nodes that
   went DOWN between its start and its end (a few seconds' slack);
3. the nodes' state when the failure is first seen: the attempt's nodes down or failing whose
   state changed in that window (sinfo's reason time);
4. a one-node attempt: its node.

Otherwise nobody is blamed (a multi-node attempt whose failed node Slurm does not name; it is
said so in the alert). The verdict is kept (`rtool/nodes/blame.py`) and never made again: a
node revived since, or drained later, changes nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.slurm.nodes import NodeEvent, NodeState
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.core.slurm.sacct import SacctRecord
from rtool.nodes.store import Evidence, EvidenceKind

#: Seconds around an attempt's end within which a node going down is that attempt's failure.
SLACK = 5.0


class Basis(str, enum.Enum):
    """What Slurm said, that a verdict stands on."""

    FAILED_NODE = "FailedNode"  # sacct's FailedNode (24.11+)
    EVENT = "node event"  # slurmdbd: the node went DOWN during the attempt
    STATE = "node state"  # sinfo, when first seen: down since the attempt's end
    ONLY_NODE = "its only node"  # a one-node attempt
    NONE = "not named"  # Slurm names no failed node: nobody blamed


@dataclass(frozen=True)
class Verdict:
    """The judgement of one NODE_FAIL attempt, made once and kept."""

    run: str  # the job name
    job_id: str  # `12_3`
    start: float | None
    end: float | None
    nodes: tuple[str, ...]  # the attempt's nodes
    blamed: tuple[str, ...]  # the node(s) Slurm says failed; () when it names none
    basis: Basis
    reason: str | None = None  # Slurm's reason for the failed node, when it gave one

    @property
    def key(self) -> str:
        return attempt_key(self.job_id, self.start, self.end)

    @property
    def when(self) -> float:
        return self.end or self.start or 0.0

    def evidence(self, node: str) -> Evidence:
        why = f" ({self.reason})" if self.reason else ""
        detail = f"attempt {self.job_id} ended NODE_FAIL on {node}{why}"
        return Evidence(EvidenceKind.NODE_FAIL, detail, self.when, self.run, self.job_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "job_id": self.job_id,
            "start": self.start,
            "end": self.end,
            "nodes": compress_hostlist(self.nodes),
            "blamed": compress_hostlist(self.blamed),
            "basis": self.basis.value,
            "reason": self.reason,
        }

    @staticmethod
    def from_json(d: Any) -> Verdict | None:
        try:
            return Verdict(
                run=str(d["run"]),
                job_id=str(d["job_id"]),
                start=_opt_float(d.get("start")),
                end=_opt_float(d.get("end")),
                nodes=tuple(expand_hostlist(str(d.get("nodes") or ""))),
                blamed=tuple(expand_hostlist(str(d.get("blamed") or ""))),
                basis=Basis(d["basis"]),
                reason=str(d["reason"]) if d.get("reason") else None,
            )
        except (KeyError, TypeError, ValueError, ParseError):
            return None


def _opt_float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def attempt_key(job_id: str, start: float | None, end: float | None) -> str:
    """One attempt of a job (a requeued job has several with the same id): `12_3@1764100000`."""
    return f"{job_id}@{int(start or end or 0)}"


def _in_window(when: float | None, r: SacctRecord) -> bool:
    if when is None:
        return False
    lo = (r.start or r.end or 0.0) - SLACK
    hi = (r.end or r.start or 0.0) + SLACK
    return lo <= when <= hi


def _down_events(r: SacctRecord, events: Sequence[NodeEvent]) -> list[NodeEvent]:
    return [e for e in events if e.node in r.nodes and e.is_down and _in_window(e.start, r)]


def _down_states(r: SacctRecord, states: Sequence[NodeState]) -> list[NodeState]:
    when = [(s, s.reason_time.timestamp() if s.reason_time else None) for s in states]
    return [s for s, t in when if s.name in r.nodes and s.is_bad and _in_window(t, r)]


def judge(
    r: SacctRecord, events: Sequence[NodeEvent] = (), states: Sequence[NodeState] = ()
) -> Verdict:
    """Pure: the node(s) Slurm says ended NODE_FAIL attempt `r` (see the module's order)."""
    down = _down_events(r, events)
    changed = _down_states(r, states)
    reasons = {e.node: e.reason for e in down if e.reason}
    reasons.update({s.name: s.reason for s in changed if s.reason and s.name not in reasons})
    if r.failed_node:
        blamed, basis = r.failed_node, Basis.FAILED_NODE
    elif down:
        blamed, basis = tuple(dict.fromkeys(e.node for e in down)), Basis.EVENT
    elif changed:
        blamed, basis = tuple(dict.fromkeys(s.name for s in changed)), Basis.STATE
    elif len(r.nodes) == 1:
        blamed, basis = r.nodes, Basis.ONLY_NODE
    else:
        blamed, basis = (), Basis.NONE
    reason = next((reasons[n] for n in blamed if n in reasons), None)
    return Verdict(r.name, r.job_id, r.start, r.end, r.nodes, tuple(blamed), basis, reason)
