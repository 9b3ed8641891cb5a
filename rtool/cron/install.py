"""`rtool cron install|uninstall`: put the chain's ticks in the user's scrontab, or keep the
self-perpetuating jobs (`--backend jobs`), or let the cluster decide (`auto`)."""

from __future__ import annotations

import time

from rtool.core.errors import RtoolError
from rtool.cron import chain, scron, slots
from rtool.cron.manage import require_layout, start
from rtool.cron.scron import Backend
from rtool.cron.store import CronStore
from rtool.cron.tick import TickEnv


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
        if old and not _is_installed(env, store):
            chain.cancel_chain(env.slurm, store.name)  # switching from the jobs backend
            lines.append(f"cancelled the self-perpetuating chain ({len(old)} job(s))")
        data = store.load()
        for name, slot in slots.initial_slots(slots.periods(cfg), now).items():
            data["last_slots"].setdefault(name, slot)
        store.save(data)
        store.write_heartbeat({**(store.read_heartbeat() or {}), "started": now})
        (env.root / "logs").mkdir(parents=True, exist_ok=True)
        scron.install(env.slurm, text, store.key, env.state.path)
        first = slots.next_slot(now, slots.tick_period(cfg).length)
        store.mark_started("scrontab", slots.period_lengths(cfg), now, first)
    spec = scron.cron_spec(cfg)
    return [*lines, f"scrontab entry installed for {env.root} ({store.name}, '{spec}')"]


def _is_installed(env: TickEnv, store: CronStore) -> bool:
    begin, _ = scron.markers(store.key)
    return begin in env.slurm.scrontab_text().splitlines()


def uninstall(env: TickEnv) -> list[str]:
    """Remove the scrontab entry (when scrontab is usable) and cancel the chain's jobs."""
    store = CronStore(env.state, env.root)
    lines = []
    if scron.detect(env.slurm).usable and scron.remove(env.slurm, store.key, env.state.path):
        lines.append(f"removed the scrontab entry of {env.root}")
    with store.chain_lock():
        jobs = chain.chain_jobs(env.slurm, store.name)
        if jobs:
            chain.cancel_chain(env.slurm, store.name)
            lines.append("cancelled " + ", ".join(j.job_id for j in jobs))
        if lines:
            store.mark_stopped("rtool cron uninstall", time.time())
    return lines or [f"nothing installed for {env.root}"]
