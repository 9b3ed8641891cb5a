"""log: has the training stopped writing? (log file or glob, or the shim's heartbeat)

A log is stale when its size and mtime have not changed for longer than `stale`. Changes are
tracked in the state dir, so a new file (rotation), a smaller size (truncation) or a new mtime
count as activity even when the file's own mtime is old or skewed. The shim's heartbeat (and
its `done` marker) is the sharper signal when present. With a `job_name`, a heartbeat left by
another run than the running one (another job or array task, or started before this run of the
job: a requeue) is not this run's: until the run writes its own, the log file's activity
counts, never older than the job's start.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import os
import re
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from rtool.core.alert import Cause, Status
from rtool.core.heartbeat import Heartbeat, RunState
from rtool.core.identity import is_mine
from rtool.core.proc import ProcError
from rtool.core.slurm import RUNNING_STATES, SqueueJob
from rtool.core.units import format_duration
from rtool.runs import describe, store
from rtool.runs.model import Ledger
from rtool.watchdogs.base import Action, CheckResult, ProbeEnv, SpecWatchdog, SqueueQuery
from rtool.watchdogs.config import LogWatch
from rtool.watchdogs.history import slug
from rtool.watchdogs.job import nodes_of, own_job_ids
from rtool.watchdogs.jobnodes import job_nodes
from rtool.watchdogs.probes import child

_NON_FINITE = re.compile(r"non[-_ ]?finite|\bnan\b|\binf\b", re.IGNORECASE)
#: Clock skew allowed between a compute node (heartbeat `started`) and slurmctld (StartTime).
CLOCK_SKEW = 5.0
#: A heartbeat `time` further ahead of this host's clock than this is not believed.
FUTURE_SKEW = 120.0


@dataclass
class LogObservation:
    spec: LogWatch
    timeout: float
    path: str | None = None
    size: int | None = None
    last_activity: float | None = None
    heartbeat: Heartbeat | None = None
    heartbeat_error: str | None = None  # the file exists but is not a heartbeat
    done: bool = False
    error: str | None = None
    timed_out: bool = False
    stuck: dict[str, Any] | None = None
    job_ids: list[str] | None = None  # running jobs named spec.job_name (None: not asked)
    jobs: list[SqueueJob] = field(default_factory=list)  # those jobs
    job_error: str | None = None
    host: str = field(default_factory=socket.gethostname)
    run: Ledger | None = None  # the stored ledger of the run named job_name (rtool watch run)
    #: Files that would have steered the verdict but are not yours: "PATH (owned by uid N)".
    ignored: list[str] = field(default_factory=list)


def advance(prev: dict[str, Any] | None, cur: dict[str, Any], now: float) -> dict[str, Any]:
    """Next stored observation of a log file: `changed_at` is when it last showed activity.

    First sight: its mtime. A new file (rotation), another size (growth, truncation) or a
    newer mtime: now (so a skewed file-server clock does not matter). An mtime moved back
    (`touch -d`, a restored copy): that older time.
    """
    ident = {k: cur.get(k) for k in ("path", "ino", "dev", "size", "mtime")}
    mtime = min(float(cur.get("mtime") or now), now)
    if prev is None or prev.get("path") is None:
        return {**ident, "changed_at": mtime}
    before = float(prev.get("changed_at", now))
    moved = any(prev.get(k) != ident[k] for k in ("path", "ino", "dev", "size"))
    new_m, old_m = float(cur.get("mtime") or 0), float(prev.get("mtime") or 0)
    if moved or new_m > old_m:
        return {**ident, "changed_at": now}
    return {**ident, "changed_at": min(before, mtime) if new_m < old_m else before}


def non_finite_stop(hb: Heartbeat) -> bool:
    """The last stop was on a non-finite loss (and no run has started since: the shim carries
    the previous stop's keys into a running heartbeat)."""
    return hb.state is RunState.STOPPED and bool(_NON_FINITE.search(hb.stop_reason or ""))


class LogWatchdog(SpecWatchdog[LogWatch]):
    """Has the training stopped writing its log (or heartbeat)?

    Example: rtool watch log 'logs/train-*.out' --stale 30m --job-name train-10b --on-hang requeue
    """

    name = "log"
    spec = LogWatch

    def target(self, spec: LogWatch) -> str:
        return spec.path

    def squeue_query(self) -> SqueueQuery | None:
        names = {s.job_name for s in self.specs if s.job_name}
        return SqueueQuery(names=frozenset(names)) if names else None

    def probe(self, env: ProbeEnv) -> list[LogObservation]:
        points = child.read_mount_points()
        stuck = child.StuckProbes(env.state)
        start = time.monotonic()
        started = []
        mounts = [child.mount_of(_fixed_prefix(s.path), points) for s in self.specs]
        hung = stuck.still_stuck(mounts)
        for spec, mount in zip(self.specs, mounts, strict=True):
            o = LogObservation(spec, self.timeout_of(spec))
            o.stuck = hung.get(mount)
            args = [spec.path] + ([spec.heartbeat] if spec.heartbeat else [])
            started.append((o, mount, None if o.stuck else child.start("logstat", *args)))
        for o, mount, proc in started:
            if proc is not None:
                out = child.collect(proc, start + o.timeout)
                o.error, o.timed_out = out.error, out.timed_out
                if out.timed_out and out.pid:
                    stuck.remember({mount: out}, time.time())
                elif out.data:
                    _observe(env, o, out.data["logstat"])
            if o.spec.job_name:
                _job_state(env, o)
                o.run = store.load(env.state, o.spec.job_name)
        return [o for o, _, _ in started]

    def check(self, probe_output: list[LogObservation], now: float) -> list[CheckResult]:
        return [check_one(o, now) for o in probe_output]


def _fixed_prefix(pattern: str) -> str:
    """The part of a glob before its first wildcard (names the mount it lives on)."""
    parts = pattern.split(os.sep)
    wild = next((i for i, p in enumerate(parts) if glob.has_magic(p)), None)
    return os.sep.join(parts[:wild]) or "."


def _observe(env: ProbeEnv, o: LogObservation, data: dict[str, Any]) -> None:
    now = time.time()
    o.path, o.size, o.done = data.get("path"), data.get("size"), bool(data.get("done"))
    o.heartbeat, o.heartbeat_error = child.parse_heartbeat(data.get("heartbeat"))
    o.ignored = [str(x) for x in data.get("ignored") or []][:5]
    if o.path is None:
        return
    rel = f"watch/log/{slug(o.spec.path)}.json"
    with env.state.lock("history-log"):
        nxt = advance(env.state.read_json(rel), data, now)
        env.state.write_json(rel, nxt)
    o.last_activity = float(nxt["changed_at"])


def _job_state(env: ProbeEnv, o: LogObservation) -> None:
    own = own_job_ids(dict(os.environ))
    try:
        jobs = env.jobs()
    except ProcError as exc:
        o.job_error = str(exc)
        return
    o.jobs = [
        j
        for j in jobs
        if j.name == o.spec.job_name
        and j.state in RUNNING_STATES
        and j.job_id not in own
        and is_mine(j.user)
    ]
    o.job_ids = [j.job_id for j in o.jobs]


def _same_job(hb: Heartbeat, j: SqueueJob) -> bool:
    """The heartbeat names this job (array task), or names none."""
    if j.is_array and hb.array_task_id:
        return (str(hb.array_job_id), hb.array_task_id) == (j.array_job_id, j.array_task)
    return not hb.job_id or hb.job_id == j.job_id


def run_start(hb: Heartbeat, jobs: list[SqueueJob]) -> float | None:
    """None when `hb` was written by the current run of one of the running `jobs`; else the
    newest start of those jobs (a run that has not written its own heartbeat yet)."""
    started = hb.started if hb.started is not None else hb.time
    starts = [j.start_time.timestamp() for j in jobs if j.start_time is not None]
    for j in jobs:
        begun = j.start_time.timestamp() if j.start_time is not None else None
        if _same_job(hb, j) and (begun is None or started is None or started >= begun - CLOCK_SKEW):
            return None
    return max(starts) if starts else None


def _hang_actions(o: LogObservation, hb: Heartbeat | None) -> list[Action]:
    spec = o.spec
    job = (o.job_ids or [""])[0] or (hb.job_id if hb is not None and hb.job_id else None)
    actions = []
    if spec.dump_stacks:
        if spec.pid:
            actions.append(Action.dump_pid(spec.pid))
        elif hb is not None and hb.pid and hb.host in (None, o.host):
            actions.append(Action.dump_pid(hb.pid))
        elif job:
            actions.append(Action.dump_job(job))
    if spec.on_hang == "requeue" and job:
        actions.append(Action.requeue(job))
    elif spec.on_hang.startswith("signal:") and job:
        actions.append(Action.send(spec.on_hang.removeprefix("signal:"), job))
    return actions


def check_one(o: LogObservation, now: float) -> CheckResult:
    """The verdict, with the nodes (or slurmctld) a bad one may follow from."""
    r = _verdict(o, now)
    if r.status is not Status.OK:  # slurmctld when the job's state could not be asked
        ran = nodes_of([n for j in o.jobs for n in job_nodes(j)], o.run)
        r.depends = (Cause.slurmctld(),) if o.job_error else ran
    if o.ignored:  # another user's files never steer the verdict: say which were left out
        note = "ignored (not yours): " + ", ".join(o.ignored)
        fields = {**r.fields, "ignored": ", ".join(o.ignored)}
        r = dataclasses.replace(r, summary=f"{r.summary}; {note}", fields=fields)
    return r


def _verdict(o: LogObservation, now: float) -> CheckResult:
    """The verdict; a heartbeat time in the future (beyond FUTURE_SKEW, or not finite) is not
    taken as fresh: the log file's own activity decides, and the result is at least WARNING."""
    hb = o.heartbeat
    if hb is None or (math.isfinite(hb.time) and hb.time <= now + FUTURE_SKEW):
        return _check_one(o, now)
    ahead = f"{format_duration(hb.time - now)} " if math.isfinite(hb.time) else ""
    note = f"heartbeat time is {ahead}in the future (clock skew or a forged file); ignored"
    r = _check_one(dataclasses.replace(o, heartbeat=None), now)
    status = Status.WARNING if r.status in (Status.OK, Status.UNKNOWN) else r.status
    fields = {**r.fields, "heartbeat_problem": note}
    return dataclasses.replace(r, status=status, summary=f"{r.summary}; {note}", fields=fields)


def _check_one(o: LogObservation, now: float) -> CheckResult:
    spec, what = o.spec, o.spec.path
    if o.stuck or o.timed_out or o.error:
        return _unprobed(o)
    hb = o.heartbeat
    if o.done or (hb is not None and hb.state is RunState.FINISHED):
        return CheckResult("log", what, Status.OK, f"{what}: training finished (done marker)")
    since = run_start(hb, o.jobs) if hb is not None and o.jobs else None
    if since is not None:
        hb = None  # the previous run's (or another job's): this run has not written one yet
    if hb is not None and non_finite_stop(hb):
        reason = hb.stop_reason
        step = hb.step if hb.step is not None else "?"
        text = f"{what}: training stopped on a non-finite loss at step {step} ({reason})"
        return CheckResult("log", what, Status.CRITICAL, text, _hb_fields(hb))
    last, source = _last_activity(o, hb, since)
    if last is None:
        return _no_file(o)
    idle = max(0.0, now - last)
    fields = {"idle": format_duration(idle), "limit": format_duration(spec.stale), "file": source}
    if hb is not None:
        fields.update(_hb_fields(hb))
    step = f" at step {hb.step}" if hb is not None and hb.step is not None else ""
    if idle <= spec.stale:
        return CheckResult(
            "log", what, Status.OK, f"{source} written {format_duration(idle)} ago{step}", fields
        )
    limit = format_duration(spec.stale)
    stale = f"{source} not written for {format_duration(idle)} (limit {limit}){step}"
    return _stale(o, hb, f"{what}:{last}", stale, fields)


def _unprobed(o: LogObservation) -> CheckResult:
    """UNKNOWN: the probe hung (now or still), or failed."""
    what = o.spec.path
    if o.stuck:
        why = "probe still hung, not probed again"
    elif o.timed_out:
        why = f"probe timed out after {o.timeout:g}s"
    else:
        why = o.error or ""
    return CheckResult("log", what, Status.UNKNOWN, f"{what}: {why}", {"error": why})


def _stale(
    o: LogObservation, hb: Heartbeat | None, token: str, stale: str, fields: dict[str, str]
) -> CheckResult:
    """Not written for longer than the limit: a hang (CRITICAL, with its actions) unless the
    training stopped on its own or its job is not running."""
    spec, what = o.spec, o.spec.path
    ended = (RunState.STOPPED, RunState.CRASHED)
    if hb is not None and hb.state in ended and not (spec.job_name and o.job_ids):
        reason = f"crashed: {hb.error}" if hb.error else hb.stop_reason or "no reason"
        at = hb.step if hb.step is not None else "?"
        note = f"{what}: training stopped ({reason}) at step {at}, not a hang"
        return CheckResult("log", what, Status.OK, note, fields)
    if spec.job_name and o.job_error:
        return CheckResult(
            "log", what, Status.UNKNOWN, f"{stale}; job state unknown: {o.job_error}", fields
        )
    if spec.job_name and not o.job_ids:
        note = f"{stale}, but job {spec.job_name} is not running (not a hang)"
        return CheckResult("log", what, Status.OK, note, fields)
    actions = _hang_actions(o, hb)
    if o.run is not None and o.run.last is not None:
        fields.update(describe.fields(o.run.last))  # which attempt, nodes, log tail
        stale += f"; {describe.phrase(o.run.last)}"
    return CheckResult("log", what, Status.CRITICAL, stale, fields, actions, token)


def _last_activity(
    o: LogObservation, hb: Heartbeat | None, since: float | None
) -> tuple[float | None, str]:
    """When the training last showed activity, and where. `since`: the start of a run that has
    not written its heartbeat yet; its log counts, and idle time starts no earlier."""
    if hb is not None:
        return hb.time, "heartbeat"
    if since is not None and (o.last_activity is None or o.last_activity < since):
        return since, "heartbeat of this run (none yet; counted from the job's start)"
    return o.last_activity, o.path or o.spec.path


def _no_file(o: LogObservation) -> CheckResult:
    what = o.spec.path
    if o.spec.job_name and o.job_ids == []:
        text = f"{what}: no file yet, job {o.spec.job_name} is not running"
        return CheckResult("log", what, Status.OK, text)
    return CheckResult("log", what, Status.UNKNOWN, f"{what}: no such file")


def _hb_fields(hb: Heartbeat) -> dict[str, str]:
    keys = ("run", "state", "step", "step_seconds", "pid", "host", "job_id", "stop_reason")
    return {k: str(getattr(hb, k)) for k in keys if getattr(hb, k) is not None}
