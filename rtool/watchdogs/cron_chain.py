"""cron: who watches the watchman. CRITICAL when the cron chain's last tick is older than its
period plus a grace, or when no scheduler job is queued or running (one squeue call);
UNKNOWN when squeue fails; OK "stopped at T by you" when it was stopped on purpose
(`rtool cron stop`/`uninstall`) and nothing runs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtool.core.alert import Status
from rtool.core.identity import current_user
from rtool.core.proc import ProcError
from rtool.core.slurm import SqueueJob
from rtool.core.units import format_duration
from rtool.cron.chain import active_jobs
from rtool.cron.config import CronConfig
from rtool.cron.store import CronStore, chain_name, dir_problem, resolve_dir
from rtool.watchdogs.base import CheckResult, ProbeEnv, SpecWatchdog, SqueueQuery
from rtool.watchdogs.config import CronWatchEntry


@dataclass(frozen=True)
class CronWatch:
    """One cron chain to watch: its folder, its tick period and the grace after it."""

    dir: Path
    period: float
    grace: float


@dataclass
class CronObservation:
    heartbeats: dict[str, dict[str, Any] | None]  # dir -> heartbeat
    jobs: list[SqueueJob] | None  # None: squeue failed
    error: str | None = None
    #: dir -> chain.json (how it was started, whether it was stopped on purpose)
    chains: dict[str, dict[str, Any]] = field(default_factory=dict)


class CronWatchdog(SpecWatchdog[CronWatch]):
    """Who watches the watchman: is the `rtool cron` chain alive?

    CRITICAL when its last tick is older than the tick period plus the grace, or when no
    scheduler job is queued or running; UNKNOWN when squeue fails. A chain stopped on
    purpose (rtool cron stop) is OK: "stopped at T by you". Run it from a login node's real
    crontab where there is one.

    Example: rtool watch cron --dir ~/rtool-cron --grace 15m
    """

    name = "cron"
    #: Its `[[watch.cron]]` entries leave out what `[cron]` gives (see `from_entries`).
    spec = CronWatchEntry

    @classmethod
    def from_entries(cls, entries: list[Any], timeout: float, config: Any) -> CronWatchdog:
        cron = getattr(config, "cron", None) or CronConfig()
        specs = []
        for e in entries:  # what an entry leaves out comes from `[cron]`
            grace = cron.grace if e.grace is None else e.grace
            specs.append(CronWatch(resolve_dir(e.dir or cron.dir), cron.tick_period, grace))
        return cls(specs, timeout)

    def target(self, spec: CronWatch) -> str:
        return str(spec.dir)

    def squeue_query(self) -> SqueueQuery | None:
        names = frozenset(chain_name(s.dir) for s in self.specs)
        return SqueueQuery(names=names)  # yours only

    def probe(self, env: ProbeEnv) -> CronObservation:
        stores = {str(s.dir): CronStore(env.state, s.dir) for s in self.specs}
        beats = {d: store.read_heartbeat() for d, store in stores.items()}
        chains = {d: store.read_chain() for d, store in stores.items()}
        try:
            return CronObservation(beats, env.jobs(), chains=chains)
        except ProcError as exc:  # SlurmError, SlurmTimeout
            return CronObservation(beats, None, str(exc), chains)

    def check(self, probe_output: CronObservation, now: float) -> list[CheckResult]:
        out = []
        for s in self.specs:
            what = str(s.dir)
            problem = dir_problem(s.dir)
            if problem:  # a file, FIFO or device given as --dir: bad input, not a dead chain
                fields = {"dir": what, "error": problem}
                out.append(CheckResult("cron", what, Status.UNKNOWN, problem, fields))
                continue
            beat = probe_output.heartbeats.get(what)
            chain = probe_output.chains.get(what) or {}
            obs = ChainObservation(beat, probe_output.jobs, probe_output.error, chain)
            out.append(check_cron(what, chain_name(s.dir), obs, s.period, s.grace, now))
        return out


@dataclass
class ChainObservation:
    heartbeat: dict[str, Any] | None
    jobs: list[SqueueJob] | None
    error: str | None = None
    chain: dict[str, Any] = field(default_factory=dict)


def check_cron(
    what: str, job_name: str, obs: ChainObservation, period: float, grace: float, now: float
) -> CheckResult:
    """Pure: the status of one cron chain from its heartbeat and the squeue snapshot."""
    beat = obs.heartbeat or {}
    tick = beat.get("time") if isinstance(beat.get("time"), (int, float)) else None
    last = _latest(tick, beat.get("started"))
    fields = {"dir": what, "job_name": job_name, "period": format_duration(period)}
    stopped = stopped_on_purpose(obs, job_name)
    if stopped is not None:
        fields["stopped"] = stopped
        return CheckResult("cron", what, Status.OK, f"{what}: {stopped}", fields)
    if last is not None:
        age = max(0.0, now - last)
        fields["last_tick_age"] = format_duration(age)
        if age > period + grace:
            label = "last tick" if tick == last else "started with no tick since,"
            limit = format_duration(period + grace)
            summary = f"{what}: {label} {format_duration(age)} ago (limit {limit})"
            return CheckResult("cron", what, Status.CRITICAL, summary, fields)
    if obs.jobs is None:
        return CheckResult(
            "cron", what, Status.UNKNOWN, f"{what}: squeue failed: {obs.error}", fields
        )
    chain = active_jobs(obs.jobs, job_name)
    if not chain:
        why = f": {beat['queue_error']}" if beat.get("queue_error") else ""
        summary = f"{what}: no scheduler job queued or running ({job_name}){why}"
        return CheckResult("cron", what, Status.CRITICAL, summary, fields)
    fields["jobs"] = ",".join(f"{j.job_id}:{j.state}" for j in chain)
    if tick is None:
        return CheckResult("cron", what, Status.OK, f"{what}: chain queued, no tick yet", fields)
    summary = f"{what}: last tick {format_duration(max(0.0, now - tick))} ago, chain queued"
    return CheckResult("cron", what, Status.OK, summary, fields)


def _latest(*times: Any) -> float | None:
    """The latest of the given epoch times (None when there is none)."""
    valid = [float(t) for t in times if isinstance(t, (int, float))]
    return max(valid) if valid else None


def stopped_on_purpose(obs: ChainObservation, job_name: str) -> str | None:
    """`stopped at 2026-05-01 10:00:00 by alice (rtool cron stop); start it again: rtool cron
    start` when the chain was stopped on purpose and no job of it is queued (or squeue cannot
    say); None otherwise (a job queued since: the chain runs again)."""
    stopped = obs.chain.get("stopped")
    if not isinstance(stopped, (int, float)) or isinstance(stopped, bool):
        return None
    if obs.jobs is not None and active_jobs(obs.jobs, job_name):
        return None
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stopped))
    who = str(obs.chain.get("stopped_by") or "?")
    by = "you" if who == current_user() else who
    how = str(obs.chain.get("stopped_how") or "rtool cron stop")
    return f"stopped at {when} by {by} ({how}); start it again: rtool cron start"
