"""The job watchdog's view of nodes: drained or down nodes a run pends on or runs on (with
Slurm's reason), nodes that failed under a run (NODE_FAIL), and keeping the run off them.

Extra Slurm calls, only when a watched job is in the queue: one `sinfo` per sweep (shared with
the sweep: `ProbeEnv.nodes`), one `scontrol show job` per job pending on unavailable nodes or
maybe on a reservation (at most MAX_SHOW), one `scontrol show reservation` when such a job
exists, one `sacct` per sweep for the NODE_FAIL attempts of the watched names that ended since
the last sweep (rtool/nodes/blame.py; a cluster without accounting: skipped, noted). A NODE_FAIL
attempt is judged once, when first seen (one `sacctmgr list events` then), and its verdict kept.
The nodes a job pends on are the bad ones (sinfo) among those it requires or may use (scontrol
show job: ReqNodeList, partition, ExcNodeList); the reason text names them on 22.05 only. A job
whose usable nodes are held by reservations waits until one ends
(`rtool.core.slurm.reservations`). The probe records evidence in the suspect store and keeps
the run's pending jobs off the suspects (rtool/nodes/upkeep.py: Slurm is called only for what
changed), unless `act` is off (`rtool status` only looks).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rtool.core.alert import Cause, Status
from rtool.core.errors import RtoolError
from rtool.core.proc import ProcError
from rtool.core.slurm import RUNNING_STATES, Slurm, SqueueJob
from rtool.core.slurm.hostlist import compress_hostlist
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
from rtool.nodes.blame import refresh
from rtool.nodes.config import NodesConfig
from rtool.nodes.exclude import Cap
from rtool.nodes.node_fault import blamed
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore
from rtool.nodes.upkeep import keep_off
from rtool.watchdogs.base import CheckResult
from rtool.watchdogs.config import JobWatch

if TYPE_CHECKING:
    from rtool.core.state import StateDir
    from rtool.runs.model import Attempt

log = logging.getLogger(__name__)
MAX_SHOW = 5


@dataclass(frozen=True)
class FailedNode:
    run: str
    node: str | None  # None: Slurm names no failed node of the attempt (nobody blamed)
    job_id: str
    when: float
    reason: str | None
    nodes: tuple[str, ...] = ()  # the attempt's nodes


@dataclass
class NodeView:
    states: dict[str, NodeState] = field(default_factory=dict)
    lines: list[NodeState] = field(default_factory=list)  # sinfo: one per node and partition
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


class FailLookup:
    """A sweep's NODE_FAIL lookup (rtool/nodes/blame.py: one sacct, new attempts judged), run
    in a thread beside the sweep's squeue and sinfo: the verdicts kept for the watched names."""

    def __init__(self, slurm: Slurm, state: StateDir, names: list[str], cfg: NodesConfig):
        # Waited for as long as one Slurm call may take: a lookup that also judges (sacctmgr,
        # sinfo) and runs late is used by the next sweep (its verdicts are kept meanwhile).
        self.timeout = slurm.timeout
        self._found: list[FailedNode] = []
        self._thread = threading.Thread(
            target=lambda: self._found.extend(_node_fails(slurm, state, names, cfg)),
            name="nodefail-lookup",
            daemon=True,
        )
        self._thread.start()

    def result(self) -> tuple[list[FailedNode], str | None]:
        """(the failed nodes, why there are none when the lookup did not finish)."""
        self._thread.join(self.timeout)
        if self._thread.is_alive():
            return [], f"NODE_FAIL lookup did not finish in {self.timeout:g}s"
        return list(self._found), None


def start_lookup(
    slurm: object, state: StateDir | None, names: list[str], cfg: NodesConfig
) -> FailLookup | None:
    """Start the NODE_FAIL lookup of `names` (None when there is nothing to look up)."""
    if not names or state is None or not isinstance(slurm, Slurm):
        return None
    return FailLookup(slurm, state, names, cfg)


def observe(
    slurm: object,
    jobs: list[SqueueJob],
    lookup: FailLookup | None = None,
    nodes: Callable[[], list[NodeState]] | None = None,
) -> NodeView:
    """Probe (I/O): the node states (when a watched job is queued; `nodes`: the sweep's sinfo,
    else one call), the nodes or reservation each pending job waits for, and the failed nodes
    of the sweep's NODE_FAIL lookup."""
    view = NodeView()
    if jobs and isinstance(slurm, Slurm):
        try:
            view.lines = nodes() if nodes is not None else slurm.sinfo_nodes()
        except (ProcError, ParseError) as exc:
            view.error = f"sinfo failed: {exc}"
        view.states = {s.name: s for s in reversed(view.lines)}  # a node's first line
        _pending(slurm, jobs, view)
    if lookup is not None:
        view.failed, error = lookup.result()
        view.error = view.error or error
    return view


def _pending(slurm: Slurm, jobs: list[SqueueJob], view: NodeView) -> None:
    """The bad nodes or the reservation each pending job waits for (`scontrol show
    reservation` asked once, and only when a job may need it)."""
    waiting = [j for j in jobs if j.state == "PENDING" and _may_wait(j.reason)]
    reservations: list[Reservation] | None = None
    for j in waiting[:MAX_SHOW]:
        rec = _pending_record(slurm, j)
        if rec is None:
            continue
        if waits_for_nodes(j.reason):
            view.unavailable[j.job_id] = _safe(pending_unavailable, rec, view.lines, j.partition)
        if may_wait_for_reservation(j.reason):
            reservations = _reservations(slurm) if reservations is None else reservations
            wait = _reservation_wait(j, rec, view.lines, reservations)
            if wait is not None:
                view.reserved[j.job_id] = wait


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


def _reservations(slurm: Slurm) -> list[Reservation]:
    try:
        return parse_reservations(slurm.scontrol("show", "reservation"))
    except (ProcError, ParseError) as exc:
        log.info("no reservations: %s", exc)
        return []


def _reservation_wait(
    job: SqueueJob, rec: dict[str, str], lines: list[NodeState], found: list[Reservation]
) -> ReservationWait | None:
    """The reservation a pending job waits for, if Slurm shows one."""
    bad = {n.name for n in lines if n.is_bad}
    usable = [n for n in _safe(candidate_nodes, rec, lines, job.partition) if n not in bad]
    own = rec.get("Reservation")
    own = None if own in (None, "", "(null)") else own
    needed = max(1, job.nodes)
    return reservation_wait(usable, needed, found, time.time(), job.time_limit, own)


def _node_fails(
    slurm: Slurm, state: StateDir, names: list[str], cfg: NodesConfig
) -> list[FailedNode]:
    """The kept NODE_FAIL verdicts of the watched names (new attempts judged first)."""
    try:
        lookup = refresh(slurm, state, names, cfg.expiry)
    except (ProcError, ParseError, ValueError, OSError) as exc:
        log.info("no NODE_FAIL lookup: %s", exc)
        return []
    out = []
    for v in lookup.verdicts:
        for node in v.blamed or (None,):
            out.append(FailedNode(v.run, node, v.job_id, v.when, v.reason, v.nodes))
    return out


def record_signatures(attempts: list[Attempt]) -> list[tuple[str, Evidence]]:
    """Node-level log signatures of the runs' attempts (XID, ECC, NCCL timeout) as evidence."""
    out = []
    for a in attempts:
        sig = a.signature
        if sig is None:
            continue
        for node in blamed(a.nodes, sig.name, sig.line, sig.node):
            detail = f"{sig.label} in attempt {a.job_id}" + (f": {sig.line}" if sig.line else "")
            when = a.ended or a.started or time.time()
            out.append(
                (node, Evidence(EvidenceKind.SIGNATURE, detail, when, a.run, a.job_id, sig.line))
            )
    return out


def _drains(jobs: list[SqueueJob], view: NodeView, now: float) -> list[tuple[str, Evidence]]:
    out = []
    for j in jobs:
        for node in job_nodes(j) + view.unavailable.get(j.job_id, []):
            s = view.states.get(node)
            if s is not None and s.is_bad and s.reason:
                when = s.reason_time.timestamp() if s.reason_time else now
                detail = f"{s.state}: {s.reason}"
                out.append((node, Evidence(EvidenceKind.DRAIN, detail, when, j.name, j.job_id)))
    return out


def act(
    store: SuspectStore,
    slurm: object,
    jobs: list[SqueueJob],
    view: NodeView,
    cfg: NodesConfig,
    attempts: list[Attempt] | None = None,
) -> None:
    """Record the evidence (one read of the store, a write only when something is new) and keep
    each run's pending jobs off its suspects (a Slurm call only where something changed)."""
    now = time.time()
    evidence = record_signatures(attempts or [])
    for f in view.failed:
        if f.node is not None:
            why = f" ({f.reason})" if f.reason else ""
            detail = f"attempt {f.job_id} ended NODE_FAIL on {f.node}{why}"
            evidence.append(
                (f.node, Evidence(EvidenceKind.NODE_FAIL, detail, f.when, f.run, f.job_id))
            )
    store.record_many(evidence + _drains(jobs, view, now))
    if not (jobs and cfg.exclude and isinstance(slurm, Slurm) and view.lines):
        return

    suspects = [s.node for s in store.suspects(now)]
    cap = Cap(cfg.max_excluded, cfg.min_left)
    for applied in keep_off(slurm, store.state, jobs, suspects, view.lines, cap, cfg.expiry):
        if applied.error:
            log.warning("job %s: suspects not excluded: %s", applied.job_id, applied.error)
        elif applied.plan.skipped:
            kept = ",".join(applied.plan.skipped)
            log.warning(
                "job %s: suspect(s) %s not excluded: %s", applied.job_id, kept, applied.plan.why
            )


def node_note(job: SqueueJob, view: NodeView | None) -> str | None:
    """`n3 drained (GPU 3 ECC errors)` for the bad nodes a job runs on or waits for."""
    if view is None:
        return None
    names = view.unavailable.get(job.job_id) if job.state == "PENDING" else job_nodes(job)
    bad = [view.states[n] for n in names or [] if n in view.states and view.states[n].is_bad]
    return ", ".join(s.describe() for s in bad) or None


def failed_nodes(specs: list[JobWatch], nodes: NodeView | None) -> list[CheckResult]:
    """One WARNING per node that failed under a watched run (NODE_FAIL), naming the node Slurm
    recorded (rtool/nodes/nodefail.py); one per attempt whose failed node Slurm does not name."""
    if nodes is None:
        return []
    out = []
    for f in nodes.failed:
        if not any(s.pattern().fullmatch(f.run) for s in specs):
            continue
        why = f" ({f.reason})" if f.reason else ""
        fields = {"job_id": f.job_id, "run": f.run, "nodes": compress_hostlist(f.nodes)}
        depends: tuple[Cause, ...] = ()
        if f.node is None:
            summary = (
                f"{f.run}: attempt {f.job_id} ended NODE_FAIL on {len(f.nodes)} nodes "
                f"({fields['nodes']}); Slurm names no failed node: none made suspect"
            )
            what = f"{f.run}@{f.job_id}"
        else:
            summary = (
                f"{f.run}: node {f.node} failed under attempt {f.job_id} (NODE_FAIL){why}; "
                "suspect, kept off the next attempts (rtool nodes)"
            )
            fields.update(node=f.node, nodes=f.node)
            what, depends = f"{f.run}@{f.node}", (Cause.node(f.node),)
        out.append(CheckResult("job", what, Status.WARNING, summary, fields, depends=depends))
    return out
