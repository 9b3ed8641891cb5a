"""`rtool status`: gather everything into one JSON-ready dict (schema `rtool.status/1`).

The watched jobs and the cron chain share ONE squeue call (the watchdogs' `ProbeEnv`
snapshot). When it fails or times out, those sections are UNKNOWN with the reason and every
other section is still shown. Nothing here alerts or writes state.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtool.app.status import sections as status_sections
from rtool.core.alert import Status, worst
from rtool.core.identity import current_user
from rtool.core.proc import ProcError
from rtool.cron.chain import active_jobs
from rtool.cron.store import CronStore, resolve_dir
from rtool.watchdogs.base import ProbeEnv, Watchdog
from rtool.watchdogs.config import JobWatch
from rtool.watchdogs.cron_chain import ChainObservation, CronWatch, CronWatchdog, check_cron
from rtool.watchdogs.job import JobWatchdog, check_one, matching
from rtool.watchdogs.runner import query_for

if TYPE_CHECKING:
    from rtool.app.plumbing.appconfig import Config
    from rtool.core.slurm import Slurm, SqueueJob
    from rtool.core.state import StateDir

SCHEMA = "rtool.status/1"
SECTIONS = ("jobs", "cron", "alerts", "disks", "memory", "switches", "outbox", "nodes")


def gather(
    cfg: Config,
    state: StateDir,
    slurm: Slurm,
    *,
    cwd: Path,
    cron_dir: Path | None = None,
    timeout: float = 10.0,
    now: float | None = None,
) -> dict[str, Any]:
    """Everything `rtool status` shows."""
    now = time.time() if now is None else now
    jobs, cron, slurm_info = slurm_sections(cfg, state, slurm, cron_dir, now)
    alerts, outbox = status_sections.notify_sections(cfg, state, now)
    last_status = {a["key"]: a["status"] for a in alerts["open"]}
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "time": now,
        "host": socket.gethostname(),
        "user": current_user(),  # the uid's name: whose jobs the sections show
        "state_dir": str(state.path),
        "slurm": slurm_info,
        "jobs": jobs,
        "cron": cron,
        "alerts": alerts,
        "disks": status_sections.disk_section(cfg, state, last_status, now),
        "memory": status_sections.memory_section(cfg),
        "switches": status_sections.switch_section(cfg, state, cwd, timeout),
        "outbox": outbox,
        "nodes": status_sections.nodes_section(cfg, state, now),
    }
    data["status"] = overall(data)
    return data


def overall(data: dict[str, Any]) -> str:
    """The worst status of all sections (sections with nothing to judge are left out)."""
    names = [data[s].get("status") for s in SECTIONS if isinstance(data[s], dict)]
    names += [d.get("status") for d in data["disks"]]
    statuses = [Status[n] for n in names if n in Status.__members__]
    return worst(statuses).name


def job_specs(cfg: Config) -> list[JobWatch]:
    """[[watch.job]] entries plus the job names of [[watch.log]] entries not already listed."""
    specs = list(cfg.watch.job)
    names = {s.name for s in specs if not s.regex}
    for entry in cfg.watch.log:
        if entry.job_name and entry.job_name not in names:
            names.add(entry.job_name)
            specs.append(JobWatch(name=entry.job_name))
    return specs


def slurm_sections(
    cfg: Config, state: StateDir, slurm: Slurm, cron_dir: Path | None, now: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(jobs, cron, slurm) sections from one squeue call shared by both."""
    job_wd = JobWatchdog(job_specs(cfg), cfg.watch.timeout)
    job_wd.nodes_cfg, job_wd.act = cfg.nodes, False  # look at nodes; record nothing
    root = resolve_dir(cron_dir if cron_dir is not None else cfg.cron.dir)
    store = CronStore(state, root)
    beat = store.read_heartbeat()
    cron_wd = CronWatchdog([CronWatch(root, cfg.cron.tick_period, cfg.cron.grace)])
    users: list[Watchdog] = []
    if job_wd.specs:
        users.append(job_wd)
    if beat:
        users.append(cron_wd)
    env = ProbeEnv(slurm, state, query_for(users))
    before = len(slurm.calls)
    job_obs = job_wd.probe(env) if job_wd.specs else None
    cron_obs = cron_wd.probe(env) if beat else None
    calls = sum(1 for c in slurm.calls[before:] if c[0] == "squeue")
    error = short_error(env) if calls else None
    for obs in (job_obs, cron_obs):
        if obs is not None and obs.error:
            obs.error = error or obs.error
    slurm_info = {
        "status": None if not calls else ("UNKNOWN" if error else "OK"),
        "squeue_calls": calls,
        "error": error,
    }
    jobs = jobs_section(job_wd, job_obs, now)
    cron = cron_section(cfg, store, beat, cron_obs, now)
    return jobs, cron, slurm_info


def short_error(env: Any) -> str | None:
    """Why the sweep's squeue call failed, without the long argv (`squeue: timed out after 2s`);
    None when it worked (the snapshot is cached: no second call)."""
    try:
        env.jobs()
    except ProcError as exc:
        return str(exc).replace(exc.command, exc.argv[0] if exc.argv else "squeue", 1)
    except Exception as exc:
        return str(exc)
    return None


def _job_row(j: SqueueJob) -> dict[str, Any]:
    return {
        "job_id": j.job_id,
        "state": j.state,
        "reason": j.reason,
        "user": j.user,
        "partition": j.partition,
        "time_used_s": j.time_used,
        "nodelist": j.nodelist,
    }


def jobs_section(job_wd: Any, obs: Any, now: float) -> dict[str, Any]:
    entries = []
    for spec in job_wd.specs:
        result = check_one(spec, obs, now)
        found = matching(spec, obs) if obs.error is None else []
        entries.append(
            {
                "name": spec.name,
                "regex": spec.regex,
                "status": result.status.name,
                "summary": result.summary,
                "jobs": [_job_row(j) for j in found],
            }
        )
    statuses = [Status[e["status"]] for e in entries]
    return {
        "status": worst(statuses).name if statuses else None,
        "error": obs.error if obs is not None else None,
        "watched": entries,
    }


FAILED = ("failed", "timeout", "error")


def failing_cron_jobs(records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Pure: cron jobs whose last run (or last Slurm outcome) failed, timed out or errored."""
    out = []
    for name, rec in sorted(records.items()):
        status, code = rec.get("status"), rec.get("exit_code")
        outcome = rec.get("last_outcome")
        if status == "submitted" and isinstance(outcome, dict):
            status, code = outcome.get("status"), outcome.get("exit_code")
        if status in FAILED:
            row = {"job": name, "status": status, "exit_code": code, "start": rec.get("start")}
            out.append({**row, "log": rec.get("log")})
    return out


def cron_section(
    cfg: Config, store: Any, beat: dict[str, Any] | None, obs: Any, now: float
) -> dict[str, Any]:
    base: dict[str, Any] = {"dir": str(store.root), "chain_name": store.name}
    failing = failing_cron_jobs(store.load()["jobs"])
    if beat is None or obs is None:
        quiet = {"status": "WARNING" if failing else None, "started": False}
        return {**base, **quiet, "summary": "not started", "failing": failing}
    result = check_cron(
        str(store.root),
        store.name,
        ChainObservation(beat, obs.jobs, obs.error, obs.chains.get(str(store.root)) or {}),
        cfg.cron.tick_period,
        cfg.cron.grace,
        now,
    )
    chain = None
    if obs.jobs is not None:
        chain = [_job_row(j) for j in active_jobs(obs.jobs, store.name)]
    status = result.status
    if failing and status.severity < Status.WARNING.severity:
        status = Status.WARNING
    tick = beat.get("time")
    return {
        **base,
        "status": status.name,
        "chain_status": result.status.name,
        "started": True,
        "summary": result.summary,
        "error": obs.error,
        "chain_jobs": chain,
        "started_at": beat.get("started"),
        "last_tick": tick if isinstance(tick, (int, float)) else None,
        "lateness_s": beat.get("lateness"),
        "next_tick": beat.get("next_slot"),
        "period_s": cfg.cron.tick_period,
        "queue_error": beat.get("queue_error"),
        "failing": failing,
    }
