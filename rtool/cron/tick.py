"""One tick of the scheduler (what the chain's Slurm job runs).

1. queue the next tick at the next wall-clock slot (before anything else can fail), unless
   Slurm starts the ticks itself (the scrontab backend, rtool/cron/scron.py);
2. run what is due: each period once when its slot is newer than the last run (missed slots
   run once), cron.d lines that fired since the last check, and record the outcome of the
   `*.slurm` jobs submitted earlier;
3. write the heartbeat, hand alerts to notify, ping the health URL, remove old logs.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rtool.core.alert import Alert, AlertKey, Status
from rtool.core.slurm import Slurm, SlurmError
from rtool.cron import chain, outcomes, slots
from rtool.cron.jobs import Job, Refused, is_due, scan
from rtool.cron.runner import JobResult, remove_old_logs, run_job
from rtool.cron.store import CronStore

if TYPE_CHECKING:
    from rtool.core.state import StateDir
    from rtool.cron.config import CronConfig
    from rtool.notify.config import NotifyConfig


class CronSettings(Protocol):
    """The config sections a tick reads (the application's Config satisfies it)."""

    @property
    def cron(self) -> CronConfig: ...

    @property
    def notify(self) -> NotifyConfig: ...


log = logging.getLogger(__name__)

#: Pauses between attempts to queue the next tick (a transient slurmctld hiccup must not
#: end the chain).
SUBMIT_RETRIES = (2.0, 5.0, 15.0)


@dataclass
class TickEnv:
    config: CronSettings
    state: StateDir
    slurm: Slurm
    root: Path
    #: The config files this rtool read (absolute, in order): every tick reads exactly these.
    config_files: tuple[Path, ...] = ()
    #: False when Slurm itself starts the ticks (the scrontab backend): queue no next tick.
    chain: bool = True

    @property
    def cron(self) -> Any:
        return self.config.cron

    def __post_init__(self) -> None:
        if isinstance(self.config_files, (str, Path)):  # one file given the old way
            self.config_files = (Path(self.config_files),)
        self.config_files = tuple(Path(p) for p in self.config_files)

    def run(self, job: Job) -> JobResult:
        """Run or submit `job` (rtool's own `bin/` first on its PATH, this tick's config)."""
        env = chain.job_env(self.config_files)
        return run_job(job, self.root, timeout=self.cron.job_timeout, slurm=self.slurm, env=env)


@dataclass
class TickReport:
    start: float
    slot: float
    next_slot: float
    next_job_id: str | None = None
    queue_error: str | None = None
    busy: bool = False
    results: list[JobResult] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    removed_logs: int = 0


def tick(env: TickEnv, slot: float | None = None) -> TickReport:
    start = time.time()
    store = CronStore(env.state, env.root)
    period = slots.tick_period(env.cron)
    slot = slot if slot is not None else slots.slot_floor(start, period.length)
    now = max(start, slot)
    nxt = slots.next_slot(now, period.length)
    report = TickReport(start, slot, nxt)
    try:
        if env.chain:
            report.next_job_id, report.queue_error = queue_next(env, store, nxt)
        report.alerts.append(_scheduler_alert(report, env.root))
        with store.run_lock() as got:
            if got:
                run_due(env, store, now, report)
            else:
                report.busy = True
                log.warning("previous tick still running jobs; this tick runs none")
    finally:
        write_heartbeat(store, report, period.length)
        report.removed_logs = len(
            remove_old_logs(env.root / "logs", time.time(), env.cron.keep_logs)
        )
        send_alerts(report.alerts, env)
        ping(env, failed=any(r.failed for r in report.results) or bool(report.queue_error))
    return report


def queue_next(env: TickEnv, store: CronStore, nxt: float) -> tuple[str | None, str | None]:
    """Queue the tick for slot `nxt` unless one is already pending: (job id, error)."""
    own = os.environ.get("SLURM_JOB_ID")
    error = None
    for pause in (0.0, *SUBMIT_RETRIES):
        time.sleep(pause)
        with store.chain_lock():
            try:
                pending = [
                    j
                    for j in chain.chain_jobs(env.slurm, store.name)
                    if j.state != "RUNNING" and j.job_id != own
                ]
                if pending:
                    log.info("next tick already queued as job %s", pending[0].job_id)
                    return pending[0].job_id, None
            except SlurmError as exc:  # cannot tell: queue anyway (duplicates collapse)
                log.warning("squeue failed (%s); queueing the next tick anyway", exc)
            try:
                job_id = chain.submit_tick(
                    env.slurm, env.cron, env.root, store.name, nxt, env.config_files
                )
                log.info("next tick queued as job %s for %s", job_id, slots.begin_arg(nxt))
                return job_id, None
            except SlurmError as exc:
                error = str(exc)
                log.error("cannot queue the next tick: %s", exc)
    return None, error


def run_due(env: TickEnv, store: CronStore, now: float, report: TickReport) -> None:
    data = store.load()
    found = scan(env.root)
    report.warnings.extend(found.warnings)
    for warning in found.warnings:
        log.warning("%s", warning)
    report.alerts.extend(refused_alert(r, env.root) for r in found.refused)
    _check_submitted(env, store, data, report)
    specs = slots.periods(env.cron)
    for p in specs:
        data["last_slots"].setdefault(p.name, slots.initial_slots([p], now)[p.name])
    for name, slot in slots.due_periods(specs, data["last_slots"], now).items():
        for job in found.by_period(name):
            _run_and_record(env, store, data, job, report)
        data["last_slots"][name] = slot
        store.save(data)
    # cron.d lines that fired since they were last checked (a new line: since the last tick)
    previous = (store.read_heartbeat() or {}).get("time")
    fallback = float(previous) if isinstance(previous, (int, float)) else now
    seen = {}
    for job in found.lines:
        assert job.line is not None
        last = data["lines"].get(job.line.key, fallback)
        seen[job.line.key] = now
        if is_due(job.line.expr, float(last), now):
            _run_and_record(env, store, data, job, report)
    data["lines"] = seen
    store.save(data)


def _run_and_record(
    env: TickEnv, store: CronStore, data: dict[str, Any], job: Job, report: TickReport
) -> None:
    log.info("running %s", job.name)
    result = env.run(job)
    report.results.append(result)
    record(data, result)
    if result.status != "submitted":
        report.alerts.append(job_alert(result, env.root))
    store.save(data)


def record(data: dict[str, Any], result: JobResult) -> None:
    """Store a job's last run; a submitted Slurm job is tracked until it ends."""
    previous = data["jobs"].get(result.name) or {}
    entry = result.to_dict()
    if "last_outcome" in previous:
        entry["last_outcome"] = previous["last_outcome"]
    data["jobs"][result.name] = entry
    if result.status == "submitted" and result.job_id:
        data["slurm_jobs"][result.job_id] = {
            "name": result.name,
            "log": result.log,
            "start": result.start,
        }


def _check_submitted(
    env: TickEnv, store: CronStore, data: dict[str, Any], report: TickReport
) -> None:
    """Record the outcome of `*.slurm` jobs submitted by earlier ticks, once they end (from
    sacct when the cluster has accounting; see rtool/cron/outcomes.py)."""
    tracked = data["slurm_jobs"]
    started = {j: float(info.get("start") or 0.0) for j, info in tracked.items()}
    for job_id, found in outcomes.resolve(env.slurm, list(tracked), started, time.time()).items():
        info = tracked.pop(job_id)
        name = str(info.get("name", "?"))
        if found.status == "unknown":  # no alert either way
            log.warning("outcome of %s (job %s) unknown: %s", name, job_id, found.why)
        else:
            result = JobResult(name, "slurm", found.status, started[job_id], 0.0, found.exit_code)
            result.log, result.job_id, result.message = info.get("log"), job_id, found.message
            report.alerts.append(job_alert(result, env.root))
        entry = data["jobs"].setdefault(name, {"name": name, "kind": "slurm"})
        entry["last_outcome"] = found.as_dict()
        if entry.get("job_id") == job_id:
            entry.update(status=found.status, exit_code=found.exit_code)


def job_alert(result: JobResult, root: Path) -> Alert:
    """CRITICAL `cron:<job>` when it failed or timed out, OK when it succeeded (pure)."""
    status = Status.CRITICAL if result.failed else Status.OK
    summary = f"{result.name}: {result.message or result.status}"
    fields = {"job": result.name, "dir": str(root), "status": result.status}
    if result.exit_code is not None:
        fields["exit_code"] = str(result.exit_code)
    if result.log:
        fields["log"] = result.log
    if result.job_id:
        fields["slurm_job"] = result.job_id
    return Alert(str(AlertKey("cron", result.name)), status, summary, fields, time.time())


def refused_alert(refused: Refused, root: Path) -> Alert:
    """CRITICAL `cron:<job>`: a job file another user could have written is not run."""
    summary = f"{refused.name}: not run, {refused.why}"
    fields = {"job": refused.name, "dir": str(root), "status": "refused", "path": str(refused.path)}
    return Alert(str(AlertKey("cron", refused.name)), Status.CRITICAL, summary, fields, time.time())


def _scheduler_alert(report: TickReport, root: Path) -> Alert:
    key, fields = str(AlertKey("cron", f"scheduler:{root}")), {"dir": str(root)}
    if report.queue_error:
        summary = f"cannot queue the next tick for {root}: {report.queue_error}"
        return Alert(key, Status.CRITICAL, summary, fields)
    return Alert(key, Status.OK, f"next tick queued for {root}", fields)


def write_heartbeat(store: CronStore, report: TickReport, period: float) -> None:
    beat = {
        "time": report.start,
        "slot": report.slot,
        "lateness": slots.lateness(report.start, report.slot),
        "next_slot": report.next_slot,
        "period": period,
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "next_job_id": report.next_job_id,
        "queue_error": report.queue_error,
        "busy": report.busy,
        "host": socket.gethostname(),
        "results": [r.to_dict() for r in report.results],
        "warnings": report.warnings,
        "started": (store.read_heartbeat() or {}).get("started"),
    }
    store.write_heartbeat(beat)
    entry = {k: beat[k] for k in ("time", "slot", "lateness", "job_id", "busy")}
    entry["failed"] = sum(1 for r in report.results if r.failed)
    store.append_tick(entry)


def send_alerts(alerts: list[Alert], env: TickEnv) -> None:
    """Hand alerts to notify (dedup, repeat, resolve; also flushes the outbox)."""
    try:
        from rtool.notify.engine import process

        process(alerts, env.config.notify, env.state)
    except Exception as exc:  # a notify problem must never break the chain
        log.error("notify failed: %s", exc)


def ping(env: TickEnv, failed: bool) -> None:
    """GET the healthchecks-style URL (`<url>/fail` when something failed)."""
    url = env.cron.ping_url
    if env.cron.ping_url_env:
        url = os.environ.get(env.cron.ping_url_env) or url
    if not url:
        return
    import requests

    target = url.rstrip("/") + "/fail" if failed else url
    try:
        requests.get(target, timeout=env.cron.ping_timeout)
    except requests.RequestException as exc:
        log.warning("ping failed: %s", type(exc).__name__)
