"""The job watchdog's view of nodes: drained or down nodes a run pends on or runs on (with
Slurm's reason), nodes that failed under a run (NODE_FAIL), and keeping the run off them.

Extra Slurm calls, only when a watched job is in the queue: one `sinfo` per sweep (shared with
the sweep: `ProbeEnv.nodes`), one `scontrol show job` per job pending on unavailable nodes or
maybe on a reservation (at most MAX_SHOW), one `scontrol show reservation` when such a job
exists, one `sacct` per sweep for the watched names (a cluster without accounting: skipped,
noted). The nodes a job pends on are the bad ones (sinfo) among those it requires or may use
(scontrol show job: ReqNodeList, partition, ExcNodeList); the reason text names them on 22.05
only. A job whose usable nodes are held by reservations waits until one ends
(`rtool.core.slurm.reservations`). The probe records evidence in the suspect store and adds
suspects to the run's pending jobs, unless `act` is off (`rtool status` only looks).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rtool.core.errors import RtoolError
from rtool.core.proc import ProcError
from rtool.core.slurm import RUNNING_STATES, SqueueJob
from rtool.core.slurm.nodes import (
    NodeState,
    candidate_nodes,
    pending_records,
    pending_unavailable,
    waits_for_nodes,
)
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.core.slurm.reservations import (
    Reservation,
    ReservationWait,
    may_wait_for_reservation,
    parse_reservations,
    reservation_wait,
)
from rtool.nodes.config import NodesConfig
from rtool.nodes.signatures import blamed
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore

if TYPE_CHECKING:
    from rtool.core.slurm import Slurm
    from rtool.runs.model import Attempt

log = logging.getLogger(__name__)
MAX_SHOW = 5


@dataclass(frozen=True)
class FailedNode:
    run: str
    node: str
    job_id: str
    when: float
    reason: str | None


@dataclass
class NodeView:
    states: dict[str, NodeState] = field(default_factory=dict)
    unavailable: dict[str, list[str]] = field(default_factory=dict)  # job id -> nodes
    failed: list[FailedNode] = field(default_factory=list)
    #: job id -> the reservation a pending job waits for
    reserved: dict[str, ReservationWait] = field(default_factory=dict)
    error: str | None = None  # a node probe that failed (the job verdict stands without it)


def job_nodes(job: SqueueJob) -> list[str]:
    try:
        return expand_hostlist(job.nodelist) if job.state in RUNNING_STATES else []
    except ParseError:
        return []


def observe(
    slurm: object,
    jobs: list[SqueueJob],
    names: list[str],
    cfg: NodesConfig,
    nodes: Callable[[], list[NodeState]] | None = None,
) -> NodeView:
    """Probe (I/O): the node states (`nodes`: the sweep's sinfo, else one call), the nodes or
    reservation each pending job waits for, NODE_FAIL attempts."""
    from rtool.core.slurm import Slurm

    view = NodeView()
    if not jobs or not isinstance(slurm, Slurm):
        return view
    lines: list[NodeState] = []
    try:
        lines = nodes() if nodes is not None else slurm.sinfo_nodes()
    except (ProcError, ParseError) as exc:
        view.error = f"sinfo failed: {exc}"
    for s in lines:
        view.states.setdefault(s.name, s)
    pending = [j for j in jobs if j.state == "PENDING"]
    waiting = [
        j for j in pending if waits_for_nodes(j.reason) or may_wait_for_reservation(j.reason)
    ]
    reservations = _Reservations(slurm)
    for j in waiting[:MAX_SHOW]:
        rec = _pending_record(slurm, j)
        if rec is None:
            continue
        if waits_for_nodes(j.reason):
            view.unavailable[j.job_id] = _safe(pending_unavailable, rec, lines, j.partition)
        wait = _reservation_wait(j, rec, lines, reservations)
        if wait is not None:
            view.reserved[j.job_id] = wait
    if names:
        view.failed = _node_fails(slurm, names, cfg, view)
    return view


def _may_wait(reason: str | None) -> bool:
    return waits_for_nodes(reason) or may_wait_for_reservation(reason)


def _pending_record(slurm: Slurm, job: SqueueJob) -> dict[str, str] | None:
    """The `scontrol show job` record of a pending job (None when Slurm cannot say)."""
    target = job.job_id.split("[")[0].rstrip("_") or job.array_job_id
    try:
        recs = pending_records(slurm.show_job(target))
    except (RtoolError, ParseError) as exc:
        log.info("job %s: no pending record: %s", job.job_id, exc)
        return None
    return recs[0] if recs else None


def _safe(
    pick: Callable[[dict[str, str], list[NodeState], str], list[str]],
    rec: dict[str, str],
    lines: list[NodeState],
    partition: str,
) -> list[str]:
    """`pick(rec, lines, partition)`, or [] when a host list cannot be read."""
    try:
        return pick(rec, lines, partition)
    except ParseError as exc:
        log.info("no pending node list: %s", exc)
        return []


class _Reservations:
    """`scontrol show reservation`, asked once per sweep and only when a job may need it."""

    def __init__(self, slurm: Slurm) -> None:
        self.slurm = slurm
        self.got: list[Reservation] | None = None

    def get(self) -> list[Reservation]:
        if self.got is None:
            try:
                self.got = parse_reservations(self.slurm.scontrol("show", "reservation"))
            except (ProcError, ParseError) as exc:
                log.info("no reservations: %s", exc)
                self.got = []
        return self.got


def _reservation_wait(
    job: SqueueJob, rec: dict[str, str], lines: list[NodeState], found: _Reservations
) -> ReservationWait | None:
    """The reservation a pending job waits for, if its reason allows and Slurm shows one."""
    if not may_wait_for_reservation(job.reason):
        return None
    bad = {n.name for n in lines if n.is_bad}
    usable = [n for n in _safe(candidate_nodes, rec, lines, job.partition) if n not in bad]
    own = rec.get("Reservation")
    own = None if own in (None, "", "(null)") else own
    needed = max(1, job.nodes)
    return reservation_wait(usable, needed, found.get(), time.time(), job.time_limit, own)


def _node_fails(
    slurm: object, names: list[str], cfg: NodesConfig, view: NodeView
) -> list[FailedNode]:
    from rtool.core.slurm import Slurm
    from rtool.nodes.nodefail import node_fails

    assert isinstance(slurm, Slurm)
    try:
        records = slurm.sacct(names=names, since=time.time() - cfg.expiry)
    except (ProcError, ParseError, ValueError) as exc:
        log.info("no NODE_FAIL lookup: %s", exc)
        return []
    out = []
    for f in node_fails(records, list(view.states.values())):
        when = f.record.end or f.record.start or time.time()
        out.append(FailedNode(f.record.name, f.node, f.record.job_id, when, f.reason))
    return out


def record_signatures(store: SuspectStore, attempts: list[Attempt]) -> None:
    """Node-level log signatures of the runs' attempts (XID, ECC, NCCL timeout) as evidence."""
    for a in attempts:
        sig = a.signature
        if sig is None:
            continue
        for node in blamed(a.nodes, sig.name, sig.line):
            detail = f"{sig.label} in attempt {a.job_id}" + (f": {sig.line}" if sig.line else "")
            when = a.ended or a.started or time.time()
            store.record(
                node, Evidence(EvidenceKind.SIGNATURE, detail, when, a.run, a.job_id, sig.line)
            )


def act(
    store: SuspectStore,
    slurm: object,
    jobs: list[SqueueJob],
    view: NodeView,
    cfg: NodesConfig,
    attempts: list[Attempt] | None = None,
) -> None:
    """Record the evidence and keep each run's pending jobs off its suspects."""
    from rtool.core.slurm import Slurm

    now = time.time()
    record_signatures(store, attempts or [])
    for f in view.failed:
        detail = f"attempt {f.job_id} ended NODE_FAIL on {f.node}" + (
            f" ({f.reason})" if f.reason else ""
        )
        store.record(f.node, Evidence(EvidenceKind.NODE_FAIL, detail, f.when, f.run, f.job_id))
    for j in jobs:
        for node in job_nodes(j) + view.unavailable.get(j.job_id, []):
            s = view.states.get(node)
            if s is not None and s.is_bad and s.reason:
                when = s.reason_time.timestamp() if s.reason_time else now
                detail = f"{s.state}: {s.reason}"
                store.record(node, Evidence(EvidenceKind.DRAIN, detail, when, j.name, j.job_id))
    suspects = [s.node for s in store.suspects(now)]
    if not (suspects and cfg.exclude and isinstance(slurm, Slurm)):
        return
    from rtool.nodes.exclude import Cap, apply_to_pending  # only when there is something to exclude

    for name in sorted({j.name for j in jobs if j.state == "PENDING"}):
        mine = [j for j in jobs if j.name == name]
        for applied in apply_to_pending(slurm, mine, suspects, Cap(cfg.max_excluded, cfg.min_left)):
            if applied.error:
                log.warning("job %s: suspects not excluded: %s", applied.job_id, applied.error)


def node_note(job: SqueueJob, view: NodeView | None) -> str | None:
    """`n3 drained (GPU 3 ECC errors)` for the bad nodes a job runs on or waits for."""
    if view is None:
        return None
    names = view.unavailable.get(job.job_id) if job.state == "PENDING" else job_nodes(job)
    bad = [view.states[n] for n in names or [] if n in view.states and view.states[n].is_bad]
    return ", ".join(s.describe() for s in bad) or None
