"""What `rtool cron init|start|stop|status|run|install|uninstall` do (the CLI module only parses
and prints; the status lines are formatted by pure functions). `install` puts the chain's ticks
in the user's scrontab, or keeps the self-perpetuating jobs (`--backend jobs`), or lets the
cluster decide (`auto`)."""

from __future__ import annotations

import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any

from rtool.core.errors import RtoolError, UsageError
from rtool.core.slurm import SlurmError, SqueueJob
from rtool.core.units import format_when
from rtool.cron import chain, scron, slots
from rtool.cron.config import CronConfig
from rtool.cron.jobs import SUBDIRS, scan
from rtool.cron.runner import JobResult
from rtool.cron.scron import Backend
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
        nxt = _prime(store, env.config.cron, now)
        job_id = chain.submit_tick(
            env.slurm, env.config.cron, env.root, store.name, nxt, env.config_files
        )
        store.mark_started("jobs", slots.period_lengths(env.config.cron), now, nxt)
    first = slots.begin_arg(nxt)
    return f"cron chain started for {env.root}: job {job_id} ({store.name}), first tick {first}"


def _prime(store: CronStore, cfg: CronConfig, now: float) -> float:
    """Before a chain's first tick: each period's last slot where none is kept, and `started`
    in the heartbeat (`rtool watch cron` counts a fresh start like a tick: the first one is a
    period away); returns the first tick's slot."""
    data = store.load()
    for name, slot in slots.initial_slots(slots.periods(cfg), now).items():
        data["last_slots"].setdefault(name, slot)
    store.save(data)
    store.write_heartbeat({**(store.read_heartbeat() or {}), "started": now})
    return slots.next_slot(now, slots.tick_period(cfg).length)


def stop(env: TickEnv) -> str:
    """Cancel the chain and remember it was stopped on purpose (`rtool watch cron` then says
    "stopped at T by you", not CRITICAL), also when no job was left to cancel."""
    store = CronStore(env.state, env.root)
    with store.chain_lock():
        jobs = chain.chain_jobs(env.slurm, store.name)
        if jobs:
            env.slurm.scancel(name=store.name)  # always `--user=<you>` (rtool.core.slurm.cmd)
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
    names = [j.name for j in scan(env.root).jobs]
    beat, stopped = store.read_heartbeat(), store.read_chain().get("stopped")
    records = store.load()["jobs"]
    return format_status(
        env.root, store.name, jobs, error, beat, records, names, time.time(), stopped
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
        result = env.run(job)
        data = store.load()
        record(data, result)
        store.save(data)
    if result.status != "submitted":
        send_alerts([job_alert(result, env.root)], env)
    return result


def chain_line(
    name: str, jobs: list[SqueueJob] | None, error: str | None, stopped: Any = None
) -> str:
    """The chain's jobs; `stopped`: when it was stopped on purpose (chain.json), if it was."""
    if jobs is None:
        return f"chain:      {name}: unknown (squeue failed: {error})"
    if not jobs and isinstance(stopped, (int, float)):
        when = format_when(stopped, time.time())
        return f"chain:      {name}: stopped on purpose {when} (run `rtool cron start`)"
    if not jobs:
        return f"chain:      {name}: NOT QUEUED (run `rtool cron start`)"
    parts = [f"job {j.job_id} {j.state}" for j in jobs]
    return f"chain:      {name}: " + ", ".join(parts)


def format_status(
    root: Path,
    name: str,
    jobs: list[SqueueJob] | None,
    squeue_error: str | None,
    beat: dict[str, Any] | None,
    records: dict[str, dict[str, Any]],
    job_names: list[str],
    now: float,
    stopped: Any = None,
) -> list[str]:
    lines = [f"cron dir:   {root}", chain_line(name, jobs, squeue_error, stopped)]
    if beat:
        late = beat.get("lateness")
        late_s = f", {late:.1f}s after its slot" if isinstance(late, (int, float)) else ""
        lines.append(f"last tick:  {format_when(beat.get('time'), now, '-')}{late_s}")
        lines.append(f"next tick:  {format_when(beat.get('next_slot'), now, '-')}")
        if beat.get("queue_error"):
            lines.append(f"WARNING:    last tick could not queue the next: {beat['queue_error']}")
    else:
        lines.append("last tick:  never")
    names = sorted(set(job_names) | set(records))
    if not names:
        lines.append("jobs:       none (drop files into cron.hourly/, cron.daily/, ...)")
        return lines
    lines.append("")
    lines.append(f"{'JOB':<32} {'LAST START':<20} {'DURATION':>8} {'EXIT':>4} {'STATUS':<9} LOG")
    for job in names:
        rec = records.get(job)
        if not rec:
            lines.append(f"{job:<32} {'never':<20} {'-':>8} {'-':>4} {'-':<9} -")
            continue
        start = rec.get("start")
        start_s = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)) if start else "-"
        dur = rec.get("duration")
        dur_s = f"{dur:.1f}s" if isinstance(dur, (int, float)) else "-"
        code = rec.get("exit_code")
        status = str(rec.get("status", "-"))
        outcome = rec.get("last_outcome")
        if status == "submitted" and isinstance(outcome, dict):
            status = f"submitted (last {outcome.get('status')})"
            code = outcome.get("exit_code") if code is None else code
        gone = "" if job in job_names else " (removed)"
        lines.append(
            f"{job:<32} {start_s:<20} {dur_s:>8} {'-' if code is None else code!s:>4} "
            f"{status:<9} {rec.get('log') or '-'}{gone}"
        )
    return lines


def install(env: TickEnv, backend: Backend) -> list[str]:
    """Install the ticks of `env.root` with `backend`; returns what was done, line by line."""
    require_layout(env.root)
    lines = []
    avail = scron.detect(env.slurm)
    if backend is Backend.AUTO:
        backend = Backend.SCRONTAB if avail.usable else Backend.JOBS
        how = "scrontab" if avail.usable else "self-perpetuating jobs"
        lines.append(f"auto: {how} ({avail.reason})")
    if backend is Backend.SCRONTAB:
        if not avail.usable:
            raise RtoolError(f"cannot use scrontab: {avail.reason}; use --backend jobs or auto")
        return lines + _scrontab(env)
    store = CronStore(env.state, env.root)
    if avail.usable and scron.remove(env.slurm, store.key, env.state.path):
        lines.append(f"removed the scrontab entry of {env.root}")
    return [*lines, start(env)]


def _scrontab(env: TickEnv) -> list[str]:
    store = CronStore(env.state, env.root)
    cfg = env.config.cron
    text = scron.block(cfg, env.root, store.name, store.key, env.config_files)
    lines = []
    now = time.time()
    with store.chain_lock():
        old = chain.chain_jobs(env.slurm, store.name)
        if old and scron.markers(store.key)[0] not in env.slurm.scrontab_text().splitlines():
            env.slurm.scancel(name=store.name)  # switching from the jobs backend
            lines.append(f"cancelled the self-perpetuating chain ({len(old)} job(s))")
        first = _prime(store, cfg, now)
        (env.root / "logs").mkdir(parents=True, exist_ok=True)
        scron.install(env.slurm, text, store.key, env.state.path)
        store.mark_started("scrontab", slots.period_lengths(cfg), now, first)
    spec = scron.cron_spec(cfg)
    return [*lines, f"scrontab entry installed for {env.root} ({store.name}, '{spec}')"]


def uninstall(env: TickEnv) -> list[str]:
    """Remove the scrontab entry (when scrontab is usable) and cancel the chain's jobs."""
    store = CronStore(env.state, env.root)
    lines = []
    if scron.detect(env.slurm).usable and scron.remove(env.slurm, store.key, env.state.path):
        lines.append(f"removed the scrontab entry of {env.root}")
    with store.chain_lock():
        jobs = chain.chain_jobs(env.slurm, store.name)
        if jobs:
            env.slurm.scancel(name=store.name)
            lines.append("cancelled " + ", ".join(j.job_id for j in jobs))
        if lines:
            store.mark_stopped("rtool cron uninstall", time.time())
    return lines or [f"nothing installed for {env.root}"]
