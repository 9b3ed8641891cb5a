"""The pre-flight of a whole job, run by the batch script before training.

1. `srun --nodes=N --ntasks=N --ntasks-per-node=1 NODE_ARGV` runs the node checks on every
   allocated node (bounded by the timeout); each prints one RTOOL-PREFLIGHT line.
2. A node that fails (or gives no report while others do) becomes suspect with the output as
   evidence; an alert names it.
3. The attempt is requeued away from it: the run's other pending jobs get it in their
   ExcNodeList, this attempt is requeued (`scontrol requeue ID`) and, once it is pending again,
   gets the node in its own ExcNodeList. SIGTERM is ignored meanwhile (Slurm kills the batch
   script as the job goes back to the queue; SIGKILL follows only after KillWait). At most
   `max_requeues` times per job; past that, or when the cap forbids excluding the node, the
   attempt fails instead (exit 1) so an array goes on with its next task.

If no node answers at all (srun itself broke), nothing is blamed: the training starts.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from rtool.core.alert import Alert, AlertKey, Status
from rtool.core.errors import RtoolError
from rtool.core.proc import ProcError
from rtool.core.slurm import Slurm
from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.nodes.exclude import Cap, apply_to_pending, lists_of, partition_nodes, plan
from rtool.nodes.preflight.base import NodeReport, Outcome
from rtool.nodes.preflight.node import from_line
from rtool.nodes.store import Evidence, EvidenceKind, SuspectStore

log = logging.getLogger(__name__)

OK, FAILED, REQUEUED = 0, 1, 3


@dataclass
class JobInfo:
    """The attempt, from the batch script's environment."""

    job_id: str  # `88_3` for an array task (a bare `88` would act on every task), else `90`
    name: str  # the run (RTOOL_RUN, else the job name)
    nodes: list[str]
    partition: str | None
    restarts: int
    user: str | None = None
    job_name: str = ""  # Slurm's job name (the run's other jobs carry it too)

    @staticmethod
    def from_env(env: Mapping[str, str]) -> JobInfo:
        array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
        job_id = f"{array}_{task}" if array and task else env.get("SLURM_JOB_ID", "")
        raw = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
        try:
            nodes = expand_hostlist(raw)
        except ParseError:
            nodes = []
        return JobInfo(
            job_id=job_id,
            name=env.get("RTOOL_RUN") or env.get("SLURM_JOB_NAME", ""),
            nodes=nodes,
            partition=env.get("SLURM_JOB_PARTITION") or None,
            restarts=int(env.get("SLURM_RESTART_COUNT") or 0),
            user=env.get("SLURM_JOB_USER") or env.get("USER"),
            job_name=env.get("SLURM_JOB_NAME", ""),
        )


@dataclass
class JobOutcome:
    reports: list[NodeReport]
    bad: list[NodeReport] = field(default_factory=list)
    error: str | None = None  # the pre-flight could not run at all (nobody blamed)
    action: str = ""  # what was done about the bad nodes
    code: int = OK


def run_on_nodes(
    slurm: Slurm, info: JobInfo, node_argv: list[str], timeout: float, pin: bool = False
) -> tuple[list[NodeReport], str | None]:
    """Every node's report (a node that gave none gets a failed one), or an error when none;
    `pin`: on exactly `info.nodes` (some nodes of the allocation: spares)."""
    n = max(len(info.nodes), 1)
    args = [f"--nodes={n}", f"--ntasks={n}", "--ntasks-per-node=1", "--kill-on-bad-exit=0"]
    if pin and info.nodes:
        args.append(f"--nodelist={','.join(info.nodes)}")
    try:
        res = slurm.srun([*args, *node_argv], timeout=timeout)
        out, err = res.stdout, res.stderr
    except ProcError as exc:  # timed out: whatever the nodes said is lost with the step
        out, err = "", str(exc)
    reports = [r for r in (from_line(line) for line in out.splitlines()) if r is not None]
    if not reports:
        return [], f"no node answered the pre-flight: {err.strip()[-300:] or 'no output'}"
    seen = {r.node for r in reports}
    for node in info.nodes:
        if node not in seen:
            why = f"no report within {timeout:g}s (hung node or srun failed there)"
            reports.append(NodeReport(node, [Outcome("report", False, why, err[-500:])]))
    return reports, None


def record(store: SuspectStore, info: JobInfo, bad: list[NodeReport], now: float) -> None:
    for r in bad:
        output = "\n".join(f"[{o.check}] {o.output}" for o in r.failures if o.output)
        detail = "; ".join(f"{o.check}: {o.detail}" for o in r.failures)
        store.record(
            r.node, Evidence(EvidenceKind.PREFLIGHT, detail, now, info.name, info.job_id, output)
        )


def alerts(info: JobInfo, outcome: JobOutcome, now: float) -> list[Alert]:
    """One CRITICAL alert per failed node, naming it, the run, the attempt and the output."""
    out = []
    for r in outcome.bad:
        output = "\n".join(o.output for o in r.failures if o.output)[-1000:]
        summary = (
            f"pre-flight failed on {r.node} (run {info.name}, job {info.job_id}): "
            f"{r.summary().split(': ', 1)[1]}; {outcome.action}"
        )
        fields = {
            "node": r.node,
            "nodes": compress_hostlist(info.nodes),
            "job_id": info.job_id,
            "run": info.name,
            "action": outcome.action,
        }
        if output:
            fields["output"] = output
        key = AlertKey("preflight", f"{info.name}@{r.node}")
        out.append(Alert(str(key), Status.CRITICAL, summary, fields, now))
    return out


def requeue_away(
    slurm: Slurm, store: SuspectStore, info: JobInfo, bad: list[str], cap: Cap, max_requeues: int
) -> tuple[int, str]:
    """Keep the run off `bad`; (exit code, what was done)."""
    if info.restarts >= max_requeues:
        return FAILED, f"not requeued: {info.restarts} restart(s) reached max_requeues"
    suspects = list(dict.fromkeys([*bad, *(s.node for s in store.suspects())]))
    with contextlib.suppress(RtoolError, ParseError):  # the run's other pending jobs
        name = info.job_name or info.name
        mine = slurm.squeue(names=[name])  # yours only (never $SLURM_JOB_USER or $USER)
        apply_to_pending(slurm, [j for j in mine if j.job_id != info.job_id], suspects, cap)
    try:
        _, members = partition_nodes(slurm, info.partition)
        existing, required = lists_of(slurm.show_job(info.job_id))
        p = plan(suspects, existing, members, len(info.nodes), cap, required)
    except (RtoolError, ParseError) as exc:
        return FAILED, f"not requeued: {exc}"
    if not set(bad) <= set(p.excluded):
        kept = [n for n in bad if n not in p.excluded]
        why = p.why if set(kept) & set(p.skipped) else "the job requires it (--nodelist)"
        return FAILED, f"not requeued: cannot exclude {','.join(kept)}: {why}"
    # The requeue ends this script: SIGTERM stays ignored after it, so that the batch shell's
    # TERM (its trap passes it on) cannot end the pre-flight before it reports and alerts.
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        slurm.requeue(info.job_id)  # the task (`41_1`), never the bare array id
        if not _wait_pending(slurm, info.job_id, 20.0):
            return REQUEUED, "requeued (could not exclude the node: the job did not pend)"
        slurm.set_excluded(info.job_id, p.excluded)
    except RtoolError as exc:
        signal.signal(signal.SIGTERM, old)
        return FAILED, f"requeue away failed: {exc}"
    return REQUEUED, f"requeued away from {','.join(bad)} (excluded: {','.join(p.excluded)})"


def _wait_pending(slurm: Slurm, job_id: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        recs = slurm.show_job(job_id)
        if recs and recs[0].get("JobState", "").split()[0] == "PENDING":
            return True
        time.sleep(0.1)
    return False
