"""Gather what one sweep knows about a run (I/O, each read bounded), and rebuild its ledger.

sacct where accounting exists (`Slurm.sacct`, all attempts, by job name since the lookback);
otherwise degraded mode, saying so. The heartbeat through `rtool.core.heartbeat`, the batch
script's records through `rtool.runs.attempt_records`, logs through `rtool.runs.logtail`.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError, read_heartbeat
from rtool.core.identity import is_mine
from rtool.core.slurm import AccountingDisabled, SacctRecord, Slurm, SlurmError, SqueueJob
from rtool.core.state import StateDir
from rtool.runs import finish, launcherlogs, store
from rtool.runs import ledger as ledger_mod
from rtool.runs.attempt_records import BatchRecord, read_records, records_path
from rtool.runs.config import RunsConfig, RunWatch
from rtool.runs.health import crash_loop
from rtool.runs.inplace import RestartRecord, read_restarts, restarts_path
from rtool.runs.logtail import UntrustedFile, read_logs
from rtool.runs.model import Attempt, Ledger

log = logging.getLogger(__name__)


def log_path(pattern: str, a: Attempt, job_name: str) -> str:
    """Slurm's filename pattern for this attempt (%j %A %a %x %%)."""
    array = a.array_job_id or a.job_id.split("_")[0]
    task = str(a.array_task_id) if a.array_task_id is not None else "4294967294"
    subs = {"j": a.job_id_raw or a.job_id, "A": array, "a": task, "x": job_name, "%": "%"}
    return os.path.expanduser(re.sub(r"%([jAax%])", lambda m: subs[m.group(1)], pattern))


def log_reader(spec: RunWatch, limit: int) -> ledger_mod.LogReader | None:
    pattern, ranks = spec.log, spec.launcher_logs
    if not pattern and not ranks:
        return None

    def read(a: Attempt) -> tuple[str, tuple[str, ...]] | None:
        got = _read_log(spec, pattern, a, limit) if pattern else None
        if not ranks or a.started is None:
            return got
        more = launcherlogs.read(ranks, a.started, a.ended or time.time(), 64 * 1024)
        if not more:
            return got
        return (got[0] if got else ranks), (*(got[1] if got else ()), *more)

    return read


def _read_log(
    spec: RunWatch, pattern: str, a: Attempt, limit: int
) -> tuple[str, tuple[str, ...]] | None:
    path = log_path(pattern, a, spec.slurm_name)
    try:  # the per-task logs too when the pattern has %t or %N
        return read_logs(path, a.nodes, limit)
    except FileNotFoundError:
        return None
    except (UntrustedFile, OSError) as exc:
        log.info("run %s: not reading %s: %s", spec.name, path, exc)
        return None


def _sacct(spec: RunWatch, slurm: Slurm, prev: Ledger | None, now: float) -> list[SacctRecord]:
    """The run's accounting records since the lookback (or its first known attempt)."""
    since = now - spec.lookback
    firsts = [a.queued_at or a.started for a in (prev.attempts if prev else [])]
    known = [t for t in firsts if t is not None]
    if known:
        since = min(since, min(known) - 60)
    recs = slurm.sacct(names=[spec.slurm_name], since=since, all_attempts=True)
    return [r for r in recs if r.name == spec.slurm_name]


def _heartbeat(spec: RunWatch) -> tuple[Heartbeat | None, str]:
    if not spec.heartbeat:
        return None, ""
    try:
        hb = read_heartbeat(os.path.expanduser(spec.heartbeat))
    except HeartbeatFormatError as exc:
        return None, f"heartbeat unreadable: {exc}"
    if hb is not None and hb.run not in (None, spec.name):
        return None, f"heartbeat belongs to run {hb.run!r}"
    return hb, ""


def _records(spec: RunWatch) -> tuple[list[BatchRecord], str]:
    path = records_path(spec.heartbeat, spec.records)
    if not path:
        return [], ""
    try:
        got = read_records(os.path.expanduser(path))
    except OSError as exc:
        return [], f"records not read: {exc}"
    return got.records, got.note()


def _restarts(spec: RunWatch) -> tuple[list[RestartRecord], str]:
    path = records_path(spec.heartbeat, spec.records)
    if not path:
        return [], ""
    try:
        return read_restarts(restarts_path(os.path.expanduser(path))), ""
    except OSError as exc:
        return [], f"restart records not read: {exc}"


def _accounting(
    spec: RunWatch, slurm: Slurm | None, prev: Ledger | None, now: float
) -> tuple[list[SacctRecord] | None, list[str]]:
    """sacct's records of the run, or None and why not (degraded mode)."""
    if spec.accounting != "auto" or slurm is None:
        return None, [ledger_mod.DEGRADED_NOTE]
    try:
        return _sacct(spec, slurm, prev, now), []
    except AccountingDisabled:
        return None, [ledger_mod.DEGRADED_NOTE]
    except SlurmError as exc:
        return None, [f"sacct failed ({exc}); {ledger_mod.DEGRADED_NOTE}"]


def refresh(
    spec: RunWatch,
    *,
    state: StateDir,
    slurm: Slurm | None,
    queue: Sequence[SqueueJob],
    now: float,
    runs_cfg: RunsConfig | None = None,
    save: bool = True,
) -> Ledger:
    """The run's ledger rebuilt from every source, stored in the state dir.

    Raises SlurmError only when squeue-independent sources cannot be had either (never for a
    missing accounting: that is degraded mode)."""
    cfg = runs_cfg or RunsConfig()
    prev = store.load(state, spec.name)
    sacct, notes = _accounting(spec, slurm, prev, now)
    hb, why = _heartbeat(spec)
    recs, why2 = _records(spec)
    restarts, why3 = _restarts(spec)
    notes += [n for n in (why, why2, why3) if n]
    inputs = ledger_mod.Inputs(
        run=spec.name,
        now=now,
        sacct=sacct,
        records=recs,
        heartbeat=hb,
        queue=[j for j in queue if j.name == spec.slurm_name and is_mine(j.user)],
        claim=finish.claim(spec.heartbeat),
        total_steps=spec.total_steps,
        note="; ".join(notes),
        keep=cfg.keep_attempts,
        restarts=restarts,
    )
    led = ledger_mod.build(prev, inputs, log_reader(spec, int(cfg.log_tail)), cfg.patterns())
    looping = crash_loop(led, spec.crash_loop, spec.short) is not None
    led.crash_loop_at = (led.crash_loop_at or now) if looping else None
    if save:
        with state.lock(f"run-{store.ledger_file(spec.name).replace('/', '-')}"):
            store.save(state, led)
    return led
