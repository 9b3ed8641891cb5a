"""What `rtool cron init|start|stop|status|run` do (the CLI module only parses and prints)."""

from __future__ import annotations

import shutil
import time
from importlib import resources
from pathlib import Path

from rtool.core.errors import RtoolError, UsageError
from rtool.core.slurm import SlurmError
from rtool.cron import chain, slots
from rtool.cron.jobs import SUBDIRS, scan
from rtool.cron.runner import JobResult, run_job
from rtool.cron.status import format_status
from rtool.cron.store import CronStore
from rtool.cron.tick import TickEnv, job_alert, record, send_alerts

#: Example file -> the folder `init` copies it into (examples are disabled until edited).
EXAMPLES = {
    "rtool-watch.sh.example": "cron.hourly",
    "cleanup-checkpoints.slurm.example": "cron.daily",
    "rtool-watch.cron": "cron.d",
}


def init(root: Path) -> list[str]:
    """Create the cron folder layout and the example jobs; returns what was created. New
    folders are 0755 whatever the umask: a cron folder others can write is refused (jobs.py)."""
    created = []
    for d in (root, *(root / sub for sub in SUBDIRS)):
        if not d.is_dir():
            try:
                d.mkdir(parents=True, exist_ok=True)
                d.chmod(0o755)
            except OSError as exc:
                raise RtoolError(f"cannot create {d}: {exc.strerror}") from None
            if d != root:
                created.append(f"{d}/")
    examples = resources.files("rtool.cron").joinpath("examples")
    for name, sub in EXAMPLES.items():
        target = root / sub / name
        if not target.exists():
            with resources.as_file(examples.joinpath(name)) as src:
                shutil.copyfile(src, target)
            target.chmod(0o644)
            created.append(str(target))
    return created


def require_layout(root: Path) -> None:
    missing = [s for s in SUBDIRS if not (root / s).is_dir()]
    if missing:
        raise UsageError(
            f"{root} is not a cron dir (missing {', '.join(missing)}); run: rtool cron init {root}"
        )


def start(env: TickEnv) -> str:
    """Queue the first tick at the next slot, unless a chain already runs for this folder."""
    require_layout(env.root)
    store = CronStore(env.state, env.root)
    now = time.time()
    with store.chain_lock():
        jobs = chain.chain_jobs(env.slurm, store.name)
        if jobs:
            listed = ", ".join(f"job {j.job_id} {j.state}" for j in jobs)
            return (
                f"a cron chain already runs for {env.root} ({store.name}: {listed}); nothing done"
            )
        data = store.load()
        for name, slot in slots.initial_slots(slots.periods(env.config.cron), now).items():
            data["last_slots"].setdefault(name, slot)
        store.save(data)
        # `rtool watch cron` counts a fresh start like a tick (the first one is a period away)
        store.write_heartbeat({**(store.read_heartbeat() or {}), "started": now})
        nxt = slots.next_slot(now, slots.tick_period(env.config.cron).length)
        job_id = chain.submit_tick(
            env.slurm, env.config.cron, env.root, store.name, nxt, env.config_files
        )
        store.mark_started("jobs", slots.period_lengths(env.config.cron), now, nxt)
    first = slots.begin_arg(nxt)
    return f"cron chain started for {env.root}: job {job_id} ({store.name}), first tick {first}"


def stop(env: TickEnv) -> str:
    """Cancel the chain and remember it was stopped on purpose (`rtool watch cron` then says
    "stopped at T by you", not CRITICAL), also when no job was left to cancel."""
    store = CronStore(env.state, env.root)
    with store.chain_lock():
        jobs = chain.chain_jobs(env.slurm, store.name)
        if jobs:
            chain.cancel_chain(env.slurm, store.name)
        store.mark_stopped("rtool cron stop", time.time())
    if not jobs:
        return f"no cron chain runs for {env.root} (marked stopped: rtool watch cron says so)"
    return f"cron chain stopped for {env.root}: cancelled " + ", ".join(j.job_id for j in jobs)


def status(env: TickEnv) -> list[str]:
    store = CronStore(env.state, env.root)
    jobs, error = None, None
    try:
        jobs = chain.chain_jobs(env.slurm, store.name)
    except SlurmError as exc:
        error = str(exc)
    found = scan(env.root)
    data = store.load()
    names = [j.name for j in found.jobs]
    beat, stopped = store.read_heartbeat(), store.read_chain().get("stopped")
    return format_status(
        env.root, store.name, jobs, error, beat, data["jobs"], names, time.time(), stopped
    )


def run_one(env: TickEnv, name: str) -> JobResult:
    """Run (or submit) one job now, record it like a tick would, and alert on failure."""
    require_layout(env.root)
    found = scan(env.root)
    matches = found.find(name)
    if not matches:
        known = ", ".join(j.name for j in found.jobs) or "none"
        raise UsageError(f"no cron job named {name!r} in {env.root} (jobs: {known})")
    if len(matches) > 1:
        raise UsageError(f"{name!r} is ambiguous: {', '.join(j.name for j in matches)}")
    job = matches[0]
    store = CronStore(env.state, env.root)
    with store.run_lock() as got:
        if not got:
            raise RtoolError("a tick is running jobs right now; try again in a moment")
        result = run_job(
            job, env.root, timeout=env.cron.job_timeout, slurm=env.slurm, env=env.job_env()
        )
        data = store.load()
        record(data, result)
        store.save(data)
    if result.status != "submitted":
        send_alerts([job_alert(result, env.root)], env)
    return result
