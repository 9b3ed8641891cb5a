"""Keep a run off its suspect nodes: `--exclude` at submission, ExcNodeList of pending jobs.

Always within a cap, so a run is never excluded from its whole partition: at most
`max_excluded` percent of the partition's nodes are excluded (the user's own exclusions
count), and at least the nodes the job needs plus `min_left` stay available. Only nodes of
the partition are added (sbatch refuses unknown node names). Newest suspects win.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rtool.core.errors import RtoolError
from rtool.core.slurm import Slurm, SqueueJob
from rtool.core.slurm.hostlist import compress_hostlist, sort_hosts
from rtool.core.slurm.nodes import NodeState
from rtool.core.slurm.parse import ParseError, expand_hostlist

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cap:
    """The defaults keep a 2-node job off one bad node of 3 (and a 1-node job off one of 2)."""

    max_excluded: float = 50.0  # percent of the partition's nodes
    min_left: int = 0  # nodes left beyond what the job needs

    def _limits(self, partition_size: int, needed: int) -> tuple[int, int]:
        by_share = math.floor(partition_size * self.max_excluded / 100.0 + 1e-9)
        by_need = partition_size - max(needed, 1) - max(self.min_left, 0)
        return by_share, by_need

    def allowed(self, partition_size: int, needed: int) -> int:
        """How many of the partition's nodes may be excluded in all."""
        return max(0, min(self._limits(partition_size, needed)))

    def why(self, partition_size: int, needed: int) -> str:
        """Which limit keeps a suspect in: `[nodes] max_excluded 50% of 3 node(s) allows 1`."""
        by_share, by_need = self._limits(partition_size, needed)
        if by_share < by_need:
            return (
                f"[nodes] max_excluded {self.max_excluded:g}% of the partition's "
                f"{partition_size} node(s) allows {max(by_share, 0)} excluded in all"
            )
        return (
            f"the job needs {max(needed, 1)} of the partition's {partition_size} node(s)"
            + (f" and [nodes] min_left {self.min_left} more stay free" if self.min_left else "")
            + f": {max(by_need, 0)} may be excluded in all"
        )


@dataclass
class Plan:
    """What to exclude: the job's current exclusions plus the suspects that fit under the cap."""

    excluded: list[str]  # the full list (existing first)
    added: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # suspects left out by the cap
    why: str = ""  # which limit of the cap left them out
    outside: list[str] = field(default_factory=list)  # suspects not in the partition


def plan(
    suspects: list[str],
    existing: list[str],
    partition_nodes: list[str],
    needed: int,
    cap: Cap,
    required: Sequence[str] = (),
) -> Plan:
    """Pure: which suspects to add to `existing` (both node names) in a partition. A node the
    job requires (`--nodelist`) is never added: the job could not start at all."""
    members = set(partition_nodes) - set(required)
    excluded = list(dict.fromkeys(existing))
    room = cap.allowed(len(members), needed) - len([n for n in excluded if n in members])
    result = Plan(excluded=excluded)
    for node in dict.fromkeys(suspects):
        if node in excluded:
            continue
        if node not in members:
            result.outside.append(node)
        elif room > 0:
            result.added.append(node)
            result.excluded.append(node)
            room -= 1
        else:
            result.skipped.append(node)
            result.why = cap.why(len(members), needed)
    return result


def partition_nodes(slurm: Slurm, partition: str | None) -> tuple[str, list[str]]:
    """(partition, its node names); the default partition when None. Raises SlurmError."""
    states = slurm.sinfo_nodes(partition=partition)
    if partition is None:
        raw = slurm.partitions()
        default = next((p.rstrip("*") for p in raw if p.endswith("*")), None)
        partition = default or (raw[0].rstrip("*") if raw else "")
        states = [s for s in states if s.partition == partition]
    return partition, sorted({s.name for s in states})


def members_of(lines: Iterable[NodeState], partition: str) -> list[str]:
    """Pure: the nodes of `partition` (the first of a job's `a,b` partitions) in sinfo's lines."""
    part = partition.split(",")[0]
    return sort_hosts(s.name for s in lines if s.partition == part)


def lists_of(records: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """(excluded, required) nodes over `scontrol show job` records (of an array: every one)."""
    out: dict[str, list[str]] = {"ExcNodeList": [], "ReqNodeList": []}
    for rec in records:
        for key, names in out.items():
            raw = rec.get(key, "")
            try:
                names.extend(expand_hostlist(raw))
            except ParseError:
                log.warning("job %s: cannot read %s %r", rec.get("JobId", "?"), key, raw)
    return list(dict.fromkeys(out["ExcNodeList"])), list(dict.fromkeys(out["ReqNodeList"]))


@dataclass
class Applied:
    job_id: str
    plan: Plan
    error: str | None = None
    removed: list[str] = field(default_factory=list)  # rtool's own exclusions dropped


def target_id(job: SqueueJob) -> str:
    """The id that updates a pending record: `88` for `88_[2-10%1]`, else the job's own id."""
    return job.array_job_id if job.pending_tasks is not None else job.job_id


def apply_to_pending(
    slurm: Slurm, jobs: list[SqueueJob], suspects: list[str], cap: Cap
) -> list[Applied]:
    """Add the suspects to the ExcNodeList of each pending job in `jobs` (within the cap)."""
    done: list[Applied] = []
    sizes: dict[str, list[str]] = {}
    pending = [j for j in jobs if j.state == "PENDING"]
    for tid in dict.fromkeys(target_id(j) for j in pending):
        job = next(j for j in pending if target_id(j) == tid)
        try:
            if job.partition not in sizes:
                sizes[job.partition] = partition_nodes(slurm, job.partition.split(",")[0])[1]
            records = slurm.show_job(tid)
            existing, required = lists_of(records)
            p = plan(suspects, existing, sizes[job.partition], job.nodes or 1, cap, required)
            if p.added:
                slurm.set_excluded(tid, p.excluded, records=records)
                log.info("job %s: excluded %s", tid, compress_hostlist(p.added, sort=True))
            done.append(Applied(tid, p))
        except (RtoolError, ParseError) as exc:
            done.append(Applied(tid, Plan(excluded=[]), str(exc)))
    return done
