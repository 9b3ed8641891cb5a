"""`rtool status`: the sections read from the state dir and the local machine (no Slurm).

Each function returns a JSON-ready dict (or list). Readers belong to the packages that write
the files (notify.status, watchdogs.history); this module only arranges what they return.
The one filesystem probe outside the state dir (do the switch files exist?) runs in the
watchdogs' abandonable child process with a timeout, since run folders often sit on shared
filesystems that can hang.
"""

from __future__ import annotations

import glob
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from rtool.core.alert import Status
from rtool.nodes.store import SuspectStore
from rtool.notify.status import collect
from rtool.runs.names import submissions
from rtool.slurm_templates.submit import switch_path
from rtool.watchdogs import history
from rtool.watchdogs.probes import child

if TYPE_CHECKING:
    from rtool.app.plumbing.appconfig import Config
    from rtool.core.state import StateDir

#: How many recent `rtool submit` records the switches section lists.
MAX_SUBMISSIONS = 5


def _status_name(value: Any) -> str | None:
    return value if value in Status.__members__ else None


def _severity(name: str | None) -> int:
    return Status[name].severity if name else -1


# -- alerts and outbox (notify's own reader) ------------------------------------------------------
def notify_sections(cfg: Config, state: StateDir, now: float) -> tuple[dict[str, Any], ...]:
    """(alerts, outbox) from `rtool.notify.status.collect` (one read of the outbox and alert
    state)."""
    data = collect(cfg.notify, state, now)
    open_alerts = [
        {
            "key": key,
            "status": info["status"],
            "since": info.get("since"),
            "notified": info.get("notified") is not None,
            "summary": info.get("summary") or "",
            **({"folded_into": info["folded_into"]} if info.get("folded_into") else {}),
        }
        for key, info in data["alerting"].items()
    ]
    open_alerts.sort(key=lambda a: (-_severity(_status_name(a["status"])), a["since"] or 0.0))
    box = data["outbox"]
    channels = {
        name: {
            "configured": bool(info.get("configured")),
            "queued": box["per_channel"].get(name, 0),
            "sent": int(info.get("sent", 0) or 0),
            "last_delivery": info.get("last_ok"),
            "last_error": info.get("last_error") or box["last_errors"].get(name),
            "last_error_time": info.get("last_error_time"),
        }
        for name, info in data["channels"].items()
    }
    worst = max((_status_name(a["status"]) for a in open_alerts), key=_severity, default=None)
    outbox = {
        "status": "WARNING" if box["queued"] else "OK",
        "queued": box["queued"],
        "oldest_age_s": box["oldest_age_s"],
        "channels": channels,
    }
    return {"status": worst or "OK", "open": open_alerts}, outbox


def nodes_section(cfg: Config, state: StateDir, now: float) -> dict[str, Any]:
    """The suspect nodes (rtool nodes): informational, they do not change the overall status."""
    suspects = SuspectStore(state, cfg.nodes.expiry).suspects(now)
    return {"status": None, "suspects": [s.to_json(cfg.nodes.expiry) for s in suspects]}


# -- disks: runway from the disk watchdog's history ----------------------------------------------
def disk_section(cfg: Config, state: StateDir, alert_status: dict[str, str], now: float) -> Any:
    """One entry per partition watched in the config or with a recorded history."""
    histories = history.read_all(state, "disk")
    specs = {d.path: d for d in cfg.watch.disk}
    out = []
    for path in [*specs, *sorted(set(histories) - set(specs))]:
        spec = specs.get(path)
        min_span = spec.trend_min_span if spec else 3600.0
        runway_limit = spec.runway if spec else None
        entry = disk_entry(path, histories.get(path, []), min_span, runway_limit, now)
        entry["configured"] = spec is not None
        last = alert_status.get(f"disk:{path}")
        if last and _severity(last) > _severity(entry["status"]):
            entry["status"] = last
        out.append(entry)
    return out


def disk_entry(
    path: str,
    samples: list[dict[str, float]],
    min_span: float,
    runway_limit: float | None,
    now: float,
) -> dict[str, Any]:
    """Pure: usage and runway of one partition from its history samples."""
    entry: dict[str, Any] = {"path": path, "samples": len(samples), "status": None}
    if not samples:
        return {**entry, "last_sample": None}
    last = samples[-1]
    used, free = float(last.get("used", 0.0)), float(last.get("free", 0.0))
    rate = history.trend(samples, "used", min_span)
    runway = free / rate if rate and rate > 0 else None
    status = "OK"
    if runway is not None and runway_limit is not None and runway < runway_limit:
        status = "WARNING"
    return {
        **entry,
        "status": status,
        "last_sample": last["t"],
        "last_sample_age_s": round(max(0.0, now - last["t"]), 1),
        "used_bytes": used,
        "free_bytes": free,
        "used_pct": round(used / (used + free) * 100.0, 1) if used + free > 0 else None,
        "growth_per_day_bytes": rate * 86400 if rate is not None else None,
        "runway_s": round(runway, 1) if runway is not None else None,
        "runway_limit_s": runway_limit,
        "trend_min_span_s": min_span,
    }


# -- memory of this node --------------------------------------------------------------------------
def memory_section(cfg: Config) -> dict[str, Any]:
    """RAM and swap of this node (psutil), judged by the first [[watch.memory]] thresholds."""
    spec = cfg.watch.memory[0] if cfg.watch.memory else None
    warn_at = spec.warn_used if spec else 90.0
    crit_at = spec.max_used if spec else 95.0
    swap_at = spec.max_swap_used if spec else 80.0
    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    used_pct = (vm.total - vm.available) / vm.total * 100.0 if vm.total else 0.0
    status = "OK"
    if used_pct > crit_at:
        status = "CRITICAL"
    elif used_pct > warn_at or (swap_at is not None and sw.total and sw.percent > swap_at):
        status = "WARNING"
    return {
        "status": status,
        "total_bytes": vm.total,
        "available_bytes": vm.available,
        "used_pct": round(used_pct, 1),
        "swap_total_bytes": sw.total,
        "swap_used_pct": round(sw.percent, 1) if sw.total else None,
        "warn_used_pct": warn_at,
        "max_used_pct": crit_at,
    }


# -- switch files ---------------------------------------------------------------------------------
def switch_targets(cfg: Config, state: StateDir, cwd: Path) -> list[dict[str, Any]]:
    """A `[switches]` path shared by every run (when configured so), then the switches of
    recent submissions (each run has its own by default); each lists the runs that use it."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for which in ("kill", "save"):
        configured = getattr(cfg.switches, which)
        if configured and "{run}" not in configured:
            path = switch_path(None, configured, which, "", cwd)
            source = f"[switches] {which}"
            out[(which, path)] = {"which": which, "path": path, "source": source, "jobs": []}
    for rec in submissions(state)[:MAX_SUBMISSIONS]:
        run = {"job_name": rec.job_name, "job_id": rec.job_id, "run": rec.run}
        for which, used in (("kill", rec.kill_switch), ("save", rec.save_switch)):
            new = {"which": which, "path": used, "source": "rtool submit", "jobs": []}
            out.setdefault((which, used), new)["jobs"].append(run)
    return list(out.values())


def probe_switches(items: list[dict[str, Any]], timeout: float) -> list[dict[str, Any]]:
    """Add `present` (True/False, None when the probe failed or hung) to each switch."""
    deadline = time.monotonic() + timeout
    procs = [child.start("logstat", glob.escape(item["path"])) for item in items]
    for item, proc in zip(items, procs, strict=True):
        out = child.collect(proc, deadline)
        item["present"], item["error"] = None, None
        if out.timed_out:
            item["error"] = f"probe timed out after {timeout:g}s (filesystem hung?)"
        elif out.error or out.data is None:
            item["error"] = out.error or "no data"
        else:
            item["present"] = out.data["logstat"]["path"] is not None
    return items


def switch_section(cfg: Config, state: StateDir, cwd: Path, timeout: float) -> dict[str, Any]:
    items = probe_switches(switch_targets(cfg, state, cwd), timeout)
    status = "OK"
    if any(i["present"] is None for i in items):
        status = "UNKNOWN"
    if any(i["present"] and i["which"] == "kill" for i in items):
        status = "WARNING"  # a set kill switch stops every run that uses it
    return {"status": status, "switches": items}
