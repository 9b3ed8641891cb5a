"""The job watchdog's exclusion upkeep: each pending job of a run kept off the suspects, at the
cost of what changed.

For every pending job (an array's pending tasks are one: `scontrol update jobid=88` updates
them all) it remembers, in `nodes/exclusions.json`, which suspects it was last brought in line
with and which of its excluded nodes rtool added. A sweep touches a job only when the suspect
set differs from that, or the job is new: then one `scontrol show job` (what it excludes and
requires now, and whose it is) and, when its list must change, one `scontrol update` with the
whole list in Slurm's compressed form. Nothing changed: no Slurm call at all.

The new list is the job's own exclusions (everything rtool did not add) plus the suspects that
fit under the cap (exclude.plan), so a suspect that expired or was forgotten (`rtool nodes
forget`) leaves the list again and never holds the cap's room from a newer one. The partition's
nodes come from the sweep's sinfo lines. Entries of jobs no longer pending are dropped after
the expiry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rtool.core.errors import RtoolError
from rtool.core.slurm import Slurm, SqueueJob
from rtool.core.slurm.hostlist import compress_hostlist, sort_hosts
from rtool.core.slurm.nodes import NodeState, pending_records
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.core.state import StateDir
from rtool.nodes.exclude import Applied, Cap, Plan, lists_of, members_of, plan, target_id

log = logging.getLogger(__name__)

MEMORY = "nodes/exclusions.json"
LOCK = "nodes-exclusions"


@dataclass(frozen=True)
class Kept:
    """What a pending job was last brought in line with."""

    suspects: tuple[str, ...]  # the suspect set (sorted)
    ours: tuple[str, ...]  # the nodes of its ExcNodeList that rtool added
    time: float

    def to_json(self) -> dict[str, Any]:
        return {
            "suspects": compress_hostlist(self.suspects),
            "ours": compress_hostlist(self.ours),
            "time": self.time,
        }

    @staticmethod
    def from_json(d: Any) -> Kept | None:
        try:
            return Kept(
                tuple(expand_hostlist(str(d.get("suspects") or ""))),
                tuple(expand_hostlist(str(d.get("ours") or ""))),
                float(d["time"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError, ParseError):
            return None


def load(state: StateDir) -> dict[str, Kept]:
    raw: Any = state.read_json(MEMORY, default={})
    jobs = raw.get("jobs") if isinstance(raw, dict) else None
    found = {str(t): Kept.from_json(d) for t, d in (jobs if isinstance(jobs, dict) else {}).items()}
    return {t: kept for t, kept in found.items() if kept is not None}


def _save(state: StateDir, changed: dict[str, Kept], current: set[str], keep_for: float) -> None:
    now = time.time()
    with state.lock(LOCK):
        kept = load(state)
        kept.update(changed)
        kept = {t: k for t, k in kept.items() if t in current or k.time > now - keep_for}
        jobs = {t: k.to_json() for t, k in sorted(kept.items())}
        state.write_json(MEMORY, {"version": 1, "jobs": jobs})


def _update(
    slurm: Slurm,
    tid: str,
    job: SqueueJob,
    suspects: Sequence[str],
    before: Kept | None,
    lines: Sequence[NodeState],
    cap: Cap,
) -> Applied | None:
    """Bring one pending job in line (None when it no longer pends)."""
    records = slurm.show_job(tid)
    pending = pending_records(records)
    if not pending:
        return None
    existing, required = lists_of(pending)
    ours_before = set(before.ours) if before else set()
    own = [n for n in existing if n not in ours_before]
    p = plan(list(suspects), own, members_of(lines, job.partition), job.nodes or 1, cap, required)
    removed = [n for n in existing if n not in p.excluded]
    if set(p.excluded) != set(existing):
        slurm.set_excluded(tid, p.excluded, records=records)
        log.info(
            "job %s: excluded %s (added %s, removed %s)",
            tid,
            compress_hostlist(p.excluded, sort=True) or "nothing",
            compress_hostlist(p.added, sort=True) or "none",
            compress_hostlist(removed, sort=True) or "none",
        )
    return Applied(tid, p, removed=removed)


def keep_off(
    slurm: Slurm,
    state: StateDir,
    jobs: Sequence[SqueueJob],
    suspects: Sequence[str],
    lines: Sequence[NodeState],
    cap: Cap,
    keep_for: float,
) -> list[Applied]:
    """Keep the pending jobs among `jobs` off `suspects` (newest first), touching only the jobs
    whose suspect set changed since they were last brought in line (see the module)."""
    targets: dict[str, SqueueJob] = {}
    for j in jobs:
        if j.state == "PENDING":
            targets.setdefault(target_id(j), j)
    want = tuple(sort_hosts(suspects))
    memory = load(state) if targets else {}
    todo = [t for t in targets if (memory[t].suspects != want if t in memory else bool(want))]
    if not todo:
        return []
    now = time.time()
    done: list[Applied] = []
    changed: dict[str, Kept] = {}
    for tid in todo:
        try:
            applied = _update(slurm, tid, targets[tid], suspects, memory.get(tid), lines, cap)
        except (RtoolError, ParseError) as exc:
            done.append(Applied(tid, Plan(excluded=[]), str(exc)))
            continue
        if applied is not None:
            changed[tid] = Kept(want, tuple(sort_hosts(applied.plan.added)), now)
            done.append(applied)
    if changed:
        _save(state, changed, set(targets), keep_for)
    return done
