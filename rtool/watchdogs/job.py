"""job: is the training job running or queued? One squeue call per sweep for every name.

Your own jobs only, unless an entry names `users` or a `group` (`--user`, `--group`): then it
watches theirs too, read-only (no suspect recorded, nothing excluded, held or requeued).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rtool.core.alert import Cause, Status
from rtool.core.errors import RtoolError
from rtool.core.identity import is_mine
from rtool.core.proc import ProcError, run
from rtool.core.slurm import ACTIVE_STATES, QUEUED_STATES, RUNNING_STATES, Slurm, SqueueJob
from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.units import format_duration
from rtool.nodes.config import NodesConfig
from rtool.nodes.store import SuspectStore
from rtool.runs import describe
from rtool.runs.model import Ledger
from rtool.watchdogs import jobdone, jobnodes
from rtool.watchdogs.base import CheckResult, ProbeEnv, SpecWatchdog, SqueueQuery, unknown
from rtool.watchdogs.config import JobWatch

#: Pending reasons that will not clear by themselves.
HELD = {"jobhelduser", "jobheldadmin"}
NEVER = {
    "dependencyneversatisfied",
    "launch failed requeued held",
    "badconstraints",
    "invalidaccount",
    "invalidqos",
    "accountnotallowed",
    "qosnotallowed",
    "partitionconfig",
}


@dataclass
class JobObservation:
    jobs: list[SqueueJob] | None
    error: str | None = None
    own_ids: frozenset[str] = frozenset()
    members: dict[str, list[str]] = field(default_factory=dict)
    group_errors: dict[str, str] = field(default_factory=dict)
    #: The stored run ledger of each watched name (the run view), when there is one.
    runs: dict[str, Ledger] = field(default_factory=dict)
    #: The run behind each watched name: its ledger and done marker (rtool/watchdogs/jobdone.py).
    views: dict[str, jobdone.RunView] = field(default_factory=dict)
    nodes: jobnodes.NodeView | None = None
    #: Each spec's matches (made once).
    _matched: dict[tuple[Any, ...], list[SqueueJob]] = field(default_factory=dict, repr=False)

    @cached_property
    def by_name(self) -> dict[str, list[SqueueJob]]:
        """The snapshot's jobs by job name (made once: one pass over the queue)."""
        index: dict[str, list[SqueueJob]] = {}
        for j in self.jobs or []:
            index.setdefault(j.name, []).append(j)
        return index


def own_job_ids(env: dict[str, str]) -> frozenset[str]:
    """The ids squeue shows for the job this process runs in (`123`, `88_3`), if any."""
    ids = set()
    if env.get("SLURM_JOB_ID"):
        ids.add(env["SLURM_JOB_ID"])
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        ids.add(f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}")
    return frozenset(ids)


def group_members(group: str, timeout: float) -> list[str]:
    """Members of a unix group (`getent group G`, 4th field). Raises ProcError."""
    res = run(["getent", "group", group], timeout=timeout, check=False)
    if res.returncode != 0 or not res.stdout.strip():
        raise ProcError(["getent", "group", group], "no such group", res.returncode)
    members = res.stdout.strip().split(":")[3:4]
    return [m for m in (members[0].split(",") if members else []) if m]


class JobWatchdog(SpecWatchdog[JobWatch]):
    """Is the training job running or queued? One squeue call for all names.

    RUNNING is OK; PENDING is OK unless held, never satisfiable or pending past
    --max-pending; neither running nor queued is CRITICAL; squeue failing is UNKNOWN.
    Only your own jobs count, unless --user/--group name others: theirs are watched
    read-only (nothing is excluded, held or recorded as suspect for them).

    Example: rtool watch job --name train-10b --user alice --max-pending 6h
    """

    name = "job"
    spec = JobWatch
    #: [nodes] (expiry, cap); `act` off: look at nodes, record and change nothing.
    nodes_cfg = NodesConfig()
    act = True

    def configure(self, config: Any) -> JobWatchdog:
        """Reads the app config's [nodes] section (suspect expiry, exclusion cap)."""
        if config is not None:
            self.nodes_cfg = config.nodes
        return self

    def target(self, spec: JobWatch) -> str:
        return spec.name

    def squeue_query(self) -> SqueueQuery | None:
        queries = [
            SqueueQuery(
                names=None if s.regex else frozenset([s.name]),
                users=frozenset(s.users) if s.users else None,  # None: only yours
                everyone=bool(s.group),  # a group's members are known after the call
            )
            for s in self.specs
        ]
        return SqueueQuery.union(queries) if queries else None

    def probe(self, env: ProbeEnv) -> JobObservation:
        own = own_job_ids(dict(os.environ))
        obs = JobObservation(jobs=None, own_ids=own)
        for group in {s.group for s in self.specs if s.group}:
            try:
                obs.members[group] = group_members(group, self.timeout)
            except ProcError as exc:
                obs.group_errors[group] = str(exc)
        names = sorted({s.name for s in self.specs if not s.regex})
        lookup = jobnodes.start_lookup(env.slurm, env.state, names, self.nodes_cfg)
        try:
            obs.jobs = env.jobs()
        except ProcError as exc:  # SlurmError, SlurmTimeout
            obs.error = str(exc)
        obs.views = jobdone.observe(
            env.state, self.specs, jobdone.slurm_confirms(env.slurm or Slurm(), env.state)
        )
        obs.runs = {n: v.ledger for n, v in obs.views.items() if v.ledger is not None}
        if obs.error is not None:
            return obs
        seen = list({id(j): j for s in self.specs for j in matching(s, obs)}.values())
        obs.nodes = jobnodes.observe(env.slurm, seen, lookup, env.nodes)
        mine = [j for j in seen if is_mine(j.user)]  # other users' jobs: watched, never touched
        if self.act and (mine or obs.nodes.failed):
            try:
                suspects = SuspectStore(env.state, self.nodes_cfg.expiry)
                attempts = [a for led in obs.runs.values() for a in led.attempts]
                jobnodes.act(suspects, env.slurm, mine, obs.nodes, self.nodes_cfg, attempts)
            except (ProcError, OSError, RtoolError) as exc:
                obs.nodes.error = f"suspect nodes not updated: {exc}"
        return obs

    def check(self, probe_output: JobObservation, now: float) -> list[CheckResult]:
        results = [check_one(s, probe_output, now) for s in self.specs]
        return results + jobnodes.failed_nodes(self.specs, probe_output.nodes)


def matching(spec: JobWatch, obs: JobObservation) -> list[SqueueJob]:
    """The jobs `spec` watches: yours, or (read-only) those of its `users` and `group`.

    A plain name is one dict lookup; a regex is matched once per distinct job name."""
    key = (spec.name, spec.regex, tuple(spec.users), spec.group, spec.partition)
    if key in obs._matched:
        return obs._matched[key]
    index = obs.by_name
    if spec.regex:
        pattern = spec.pattern()
        named = [j for name, jobs in index.items() if pattern.fullmatch(name) for j in jobs]
    else:
        named = index.get(spec.name, [])
    users = set(spec.users) | set(obs.members.get(spec.group or "", []))
    others = bool(spec.users or spec.group)
    mine = {u: is_mine(u) for u in {j.user for j in named}}
    found = [
        j
        for j in named
        if j.job_id not in obs.own_ids
        and (j.user in users if others else mine[j.user])
        and (spec.partition is None or j.partition == spec.partition)
    ]
    obs._matched[key] = found
    return found


def pending_status(
    spec: JobWatch, job: SqueueJob, now: float, view: jobnodes.NodeView | None = None
) -> tuple[Status, str]:
    reason = job.reason or "no reason"
    since = max(0.0, now - job.submit_time.timestamp()) if job.submit_time is not None else None
    waited = f" for {format_duration(since)}" if since is not None else ""
    where = f"(job {job.job_id})"
    note = jobnodes.node_note(job, view)
    if note:
        return Status.WARNING, f"pending{waited} on unavailable node(s): {note} {where}"
    if reason.lower() in NEVER:
        return Status.CRITICAL, f"pending{waited}, {reason}: will never start by itself {where}"
    if reason.lower() in HELD or job.state == "REQUEUE_HOLD":
        return Status.WARNING, f"pending{waited}, held ({reason}) until released {where}"
    if job.state in ("SUSPENDED", "STOPPED"):
        return Status.WARNING, f"{job.state.lower()} {where}"
    wait = view.reserved.get(job.job_id) if view is not None else None
    if wait is not None:
        return Status.OK, f"pending{waited} until {wait.describe()} {where}"
    if spec.max_pending is not None and since is not None and since > spec.max_pending:
        limit = format_duration(spec.max_pending)
        return Status.WARNING, f"pending{waited} (limit {limit}), reason {reason} {where}"
    return Status.OK, f"pending{waited} ({reason}) {where}"


def nodes_of(names: list[str], led: Ledger | None = None) -> tuple[Cause, ...]:
    """The causes a result about a run on these nodes may follow from (and on those its last
    attempt ran on, from the run's ledger `led`)."""
    if led is not None and led.last is not None:
        names = names + list(led.last.nodes)
    return tuple(Cause.node(n) for n in dict.fromkeys(names) if n)


def check_one(spec: JobWatch, obs: JobObservation, now: float) -> CheckResult:
    """The verdict of one entry, with the nodes (or slurmctld) it depends on."""
    r = _check_one(spec, obs, now)
    if obs.error is not None:
        r.depends = (Cause.slurmctld(),)
    elif r.status is not Status.OK:
        names: list[str] = []  # the nodes the entry's jobs run on or wait for
        for j in matching(spec, obs):
            names += jobnodes.job_nodes(j)
            if obs.nodes is not None:
                names += obs.nodes.unavailable.get(j.job_id, [])
        r.depends = nodes_of(names, obs.runs.get(spec.name))
    return r


def _check_one(spec: JobWatch, obs: JobObservation, now: float) -> CheckResult:
    name = spec.name
    if obs.error is not None:
        return CheckResult("job", name, Status.UNKNOWN, f"{name}: squeue failed: {obs.error}")
    if spec.group and spec.group in obs.group_errors:
        return unknown("job", name, obs.group_errors[spec.group])
    jobs = matching(spec, obs)
    running = [j for j in jobs if j.state in RUNNING_STATES]
    queued = [j for j in jobs if j.state in QUEUED_STATES]
    if running:
        return _running(name, running[0], queued, obs)
    if queued:
        return _queued(spec, queued, obs, now)
    return _gone(name, [j for j in jobs if j.state not in ACTIVE_STATES], obs)


def _looping(
    name: str, led: Ledger | None, summary: str, fields: dict[str, str]
) -> CheckResult | None:
    """CRITICAL, naming the run's last attempt, when the run is crash-looping (not finished)."""
    if led is None or led.crash_loop_at is None or led.finished or led.last is None:
        return None
    fields.update(describe.fields(led.last))
    summary += f"; the run is crash-looping: last {describe.phrase(led.last)}"
    return CheckResult("job", name, Status.CRITICAL, summary, fields)


def _running(name: str, j: SqueueJob, queued: list[SqueueJob], obs: JobObservation) -> CheckResult:
    used = format_duration(j.time_used) if j.time_used is not None else "?"
    more = f", {len(queued)} more queued" if queued else ""
    fields = {"job_id": j.job_id, "state": j.state, "nodes": j.nodelist, "user": j.user}
    summary = f"{name} running (job {j.job_id}, {used}, {j.nodelist or '?'}){more}"
    looping = _looping(name, obs.runs.get(name), summary, fields)
    if looping is not None:
        return looping
    note = jobnodes.node_note(j, obs.nodes)
    if note:
        fields["bad_nodes"] = note
        return CheckResult("job", name, Status.WARNING, f"{summary}; node {note}", fields)
    return CheckResult("job", name, Status.OK, summary, fields)


def _queued(spec: JobWatch, jobs: list[SqueueJob], obs: JobObservation, now: float) -> CheckResult:
    name, led = spec.name, obs.runs.get(spec.name)
    verdicts = [(pending_status(spec, j, now, obs.nodes), j) for j in jobs]
    on_nodes = [v for v in verdicts if jobnodes.node_note(v[1], obs.nodes)]
    (status, text), j = on_nodes[0] if on_nodes else min(verdicts, key=lambda v: v[0][0].severity)
    fields = {"job_id": j.job_id, "state": j.state, "reason": j.reason or "", "user": j.user}
    looping = _looping(name, led, f"{name} {text}", fields)
    if looping is not None:
        return looping
    note = jobnodes.node_note(j, obs.nodes)
    if note:
        fields["nodes"] = note
    elif led is not None and led.last is not None and led.last.nodes:
        fields["nodes"] = compress_hostlist(led.last.nodes)  # where the run last ran
    return CheckResult("job", name, status, f"{name} {text}", fields)


def _gone(name: str, gone: list[SqueueJob], obs: JobObservation) -> CheckResult:
    """Neither running nor queued: finished (the run says so), else CRITICAL."""
    done, step = jobdone.finished_step(obs.views.get(name), gone)
    if done:
        at = f" at step {step}" if step is not None else ""
        return CheckResult("job", name, Status.OK, f"{name} finished{at} (the run is done)")
    last = f" (last seen {gone[0].state}, job {gone[0].job_id})" if gone else ""
    fields = {}
    led = obs.runs.get(name)
    if led is not None and led.last is not None:
        fields = describe.fields(led.last)
        last += f"; last {describe.phrase(led.last)}"
    summary = f"{name} neither running nor queued{last}"
    return CheckResult("job", name, Status.CRITICAL, summary, fields)
