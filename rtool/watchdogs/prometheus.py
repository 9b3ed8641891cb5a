"""Prometheus metrics for node_exporter's textfile collector (docs/monitoring.md).

Two files in DIR: `rtool-watch-<checks>-<hash>.prom` (this invocation's checks: one file per
set of checks, so several `rtool watch` lines share DIR) and `rtool-state.prom` (what the state
dir holds, rewritten whole by each). Each is written atomically with a mkstemp file in DIR
(prometheus_client's `write_to_textfile` would use a predictable temp name). DIR must be a
folder (not a symlink) owned by you or root and not writable by group or others.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from rtool.core.errors import RtoolError
from rtool.core.state import StateDir, atomic_write
from rtool.notify.outbox import Outbox
from rtool.notify.silence_store import Silences
from rtool.runs.model import Ledger
from rtool.runs.totals import totals
from rtool.watchdogs.base import CheckResult
from rtool.watchdogs.metrics import Metric

STATE_FILE = "rtool-state.prom"
#: cron job statuses of a run that ended (a submitted Slurm job has none yet)
ENDED = ("ok", "failed", "timeout", "error")
CHECK_LABELS = ("check", "what")


class TextfileDirError(RtoolError):
    """The textfile folder is missing or unsafe."""


def check_folder(folder: Path) -> None:
    """Refuse a folder that is a symlink, not ours (or root's), or writable by others."""
    try:
        st = os.lstat(folder)
    except OSError as exc:
        raise TextfileDirError(f"textfile folder {folder}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise TextfileDirError(f"textfile folder {folder} is not a directory (or is a symlink)")
    if st.st_uid not in (os.getuid(), 0):
        raise TextfileDirError(f"textfile folder {folder} is owned by uid {st.st_uid}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise TextfileDirError(f"textfile folder {folder} is writable by group or others")


def checks_file(results: list[CheckResult]) -> str:
    """`rtool-watch-disk-log-1a2b3c4d.prom`: named by the checks and a hash of their keys."""
    names = sorted({r.watchdog for r in results}) or ["none"]
    digest = hashlib.sha256("\0".join(sorted(r.key for r in results)).encode()).hexdigest()[:8]
    return f"rtool-watch-{'-'.join(names)}-{digest}.prom"


def write(folder: Path, results: list[CheckResult], state: StateDir, now: float) -> list[Path]:
    """Write both files; returns their paths."""
    check_folder(folder)
    paths = [folder / checks_file(results), folder / STATE_FILE]
    atomic_write(paths[0], generate_latest(checks_registry(results, now)), 0o644)
    atomic_write(paths[1], generate_latest(state_registry(state, now)), 0o644)
    return paths


#: The gauges rtool writes beside the measures (rtool/watchdogs/metrics.py): name -> (help,
#: labels).
GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "rtool_check_status": (
        "Status of a check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (monitoring-plugin codes).",
        CHECK_LABELS,
    ),
    "rtool_check_timestamp_seconds": ("When the check last ran (epoch seconds).", CHECK_LABELS),
    "rtool_outbox_items": (
        "Notifications queued and not yet accepted by their channel.",
        ("channel",),
    ),
    "rtool_outbox_oldest_age_seconds": (
        "Age of the oldest queued notification of a channel.",
        ("channel",),
    ),
    "rtool_outbox_backlog": ("Notifications queued, all channels.", ()),
    "rtool_cron_last_success_timestamp_seconds": (
        "When the cron chain last completed a tick (epoch seconds).",
        ("dir",),
    ),
    "rtool_cron_job_last_run_success": (
        "1 when a cron job's last run succeeded, else 0.",
        ("dir", "job"),
    ),
    "rtool_cron_job_last_run_timestamp_seconds": (
        "When a cron job last started (epoch seconds).",
        ("dir", "job"),
    ),
    "rtool_silences_active": ("Silences in force now.", ()),
    "rtool_silenced_notifications": ("Notifications held by silences.", ()),
    "rtool_run_attempts": ("Attempts of a training run so far.", ("run",)),
    "rtool_run_goodput_ratio": (
        "Share of the allocated time that produced kept training steps (0-1).",
        ("run",),
    ),
}


def _gauge(reg: CollectorRegistry, name: str) -> Gauge:
    help_text, labels = GAUGES[name]
    return Gauge(name, help_text, labels, registry=reg)


def checks_registry(results: list[CheckResult], now: float) -> CollectorRegistry:
    reg = CollectorRegistry()
    status = _gauge(reg, "rtool_check_status")
    when = _gauge(reg, "rtool_check_timestamp_seconds")
    families = {
        m: Gauge(m.info.prom, m.info.help, CHECK_LABELS, registry=reg) for m in list(Metric)
    }
    seen: set[tuple[str, str, Metric]] = set()
    for r in results:
        status.labels(r.watchdog, r.what).set(int(r.status))
        when.labels(r.watchdog, r.what).set(now)
        for m in r.measures:
            if (r.watchdog, r.what, m.metric) not in seen:  # one sample per series
                seen.add((r.watchdog, r.what, m.metric))
                families[m.metric].labels(r.watchdog, r.what).set(m.value * m.metric.info.scale)
    return reg


def state_registry(state: StateDir, now: float) -> CollectorRegistry:
    reg = CollectorRegistry()
    _outbox(state, now, reg)
    _cron(state, reg)
    silences = Silences(state)
    _gauge(reg, "rtool_silences_active").set(len(silences.active(now)))
    _gauge(reg, "rtool_silenced_notifications").set(silences.held_count())
    attempts = _gauge(reg, "rtool_run_attempts")
    goodput = _gauge(reg, "rtool_run_goodput_ratio")
    for run, tried, good in run_samples(state, now):
        attempts.labels(run).set(tried)
        if good is not None:
            goodput.labels(run).set(good)
    return reg


def run_samples(state: StateDir, now: float) -> list[tuple[str, int, float | None]]:
    """(run, attempts, goodput) of every run whose ledger (rtool/runs/store.py, issue 14) is in
    the state dir."""
    out = []
    for path in sorted((state.path / "runs").glob("*.json")):
        data = _json(path)
        if not data.get("run"):
            continue
        try:
            t = totals(Ledger.from_json(data), now)
        except (TypeError, ValueError, KeyError):
            continue
        out.append((str(data["run"]), t.attempts, t.goodput))
    return out


def _outbox(state: StateDir, now: float, reg: CollectorRegistry) -> None:
    items = _gauge(reg, "rtool_outbox_items")
    oldest = _gauge(reg, "rtool_outbox_oldest_age_seconds")
    queued = Outbox(state).items()
    first: dict[str, float] = {}
    for item in queued:
        first.setdefault(item.channel, item.created)
    for channel, created in first.items():
        items.labels(channel).set(sum(1 for i in queued if i.channel == channel))
        oldest.labels(channel).set(max(0.0, now - created))
    _gauge(reg, "rtool_outbox_backlog").set(len(queued))


def _cron(state: StateDir, reg: CollectorRegistry) -> None:
    tick = _gauge(reg, "rtool_cron_last_success_timestamp_seconds")
    job_ok = _gauge(reg, "rtool_cron_job_last_run_success")
    job_at = _gauge(reg, "rtool_cron_job_last_run_timestamp_seconds")
    base = state.path / "cron"
    for folder in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []:
        data = _json(folder / "state.json")
        beat = _json(folder / "heartbeat.json")
        root = str(data.get("dir") or folder.name)
        if isinstance(beat.get("time"), (int, float)):
            tick.labels(root).set(float(beat["time"]))
        jobs = data.get("jobs")
        for name, entry in sorted(jobs.items() if isinstance(jobs, dict) else []):
            if not isinstance(entry, dict) or not isinstance(entry.get("start"), (int, float)):
                continue
            job_at.labels(root, name).set(float(entry["start"]))
            if entry.get("status") in ENDED:
                job_ok.labels(root, name).set(1 if entry.get("status") == "ok" else 0)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
