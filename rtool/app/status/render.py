"""`rtool status`: the dict from `status_view.gather` as one screen of plain text (pure).

The command colours the status words with rich when stdout is a terminal; the text is the
same either way.
"""

from __future__ import annotations

import time
from typing import Any

from rtool.core.alert import Status
from rtool.core.units import format_duration, format_size, format_when

WIDTH = 9  # a status column wide enough for CRITICAL


def _st(name: Any) -> str:
    return f"{name or '-':<{WIDTH}}"


def _head(title: str, status: Any, note: str = "") -> str:
    tail = f"  {note}" if note else ""
    return f"{title:<10}{_st(status)}{tail}".rstrip()


def render(data: dict[str, Any]) -> str:
    now = data["time"]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    lines = [
        f"rtool status: {data['status']}   {data['user']}@{data['host']}   {stamp}",
        f"state dir: {data['state_dir']}",
        "",
    ]
    for part in PARTS:
        lines.extend(part(data, now))
    return "\n".join(lines) + "\n"


def jobs(data: dict[str, Any], now: float) -> list[str]:
    sec, sl = data["jobs"], data["slurm"]
    if not sec["watched"]:
        return [_head("JOBS", None, "no jobs watched (add [[watch.job]] entries to the config)")]
    if sec["error"]:
        note = f"squeue failed: {sec['error']}"
    else:
        note = f"{len(sec['watched'])} watched, {sl['squeue_calls']} squeue call(s)"
    lines = [_head("JOBS", sec["status"], note)]
    for entry in sec["watched"]:
        lines.append(f"  {_st(entry['status'])} {entry['summary']}")
        for j in entry["jobs"][:8]:
            used = format_duration(j["time_used_s"]) if j["time_used_s"] is not None else "-"
            why = f" ({j['reason']})" if j["reason"] and j["state"] != "RUNNING" else ""
            where = f" on {j['nodelist']}" if j["nodelist"] else ""
            lines.append(f"  {'':<{WIDTH}}   {j['job_id']} {j['state']}{why}, {used}{where}")
        if len(entry["jobs"]) > 8:
            lines.append(f"  {'':<{WIDTH}}   ... {len(entry['jobs']) - 8} more")
    return lines


def cron(data: dict[str, Any], now: float) -> list[str]:
    sec = data["cron"]
    if not sec["started"]:
        note = f"not started for {sec['dir']} (rtool cron init && rtool cron start)"
        return [_head("CRON", sec["status"], note), *_failing(sec["failing"], now)]
    lines = [_head("CRON", sec["status"], sec["summary"])]
    if sec["chain_jobs"] is None:
        lines.append(f"  chain:      {sec['chain_name']}: UNKNOWN (squeue failed: {sec['error']})")
    elif not sec["chain_jobs"]:
        lines.append(f"  chain:      {sec['chain_name']}: NOT QUEUED (rtool cron start)")
    else:
        listed = ", ".join(f"job {j['job_id']} {j['state']}" for j in sec["chain_jobs"])
        lines.append(f"  chain:      {sec['chain_name']}: {listed}")
    late = sec["lateness_s"]
    late_s = ""
    if isinstance(late, (int, float)):
        late_s = f", {late:.1f}s" if late < 60 else f", {format_duration(late)}"
        late_s += " after its slot"
    started = f" (chain started {format_when(sec['started_at'], now)})" if sec["started_at"] else ""
    last = format_when(sec["last_tick"], now) if sec["last_tick"] else f"none yet{started}"
    lines.append(f"  last tick:  {last}{late_s if sec['last_tick'] else ''}")
    lines.append(f"  next tick:  {format_when(sec['next_tick'], now) if sec['next_tick'] else '-'}")
    if sec["queue_error"]:
        lines.append(f"  WARNING:    the last tick could not queue the next: {sec['queue_error']}")
    return lines + (_failing(sec["failing"], now) or ["  failing:    none"])


def _failing(failing: list[dict[str, Any]], now: float) -> list[str]:
    lines = []
    for f in failing:
        code = f", exit {f['exit_code']}" if f["exit_code"] is not None else ""
        log = f", log {f['log']}" if f["log"] else ""
        lines.append(
            f"  failing:    {f['job']}: {f['status']}{code} at {format_when(f['start'], now)}{log}"
        )
    return lines


def alerts(data: dict[str, Any], now: float) -> list[str]:
    sec = data["alerts"]
    if not sec["open"]:
        return [_head("ALERTS", sec["status"], "no open alerts recorded")]
    lines = [_head("ALERTS", sec["status"], f"{len(sec['open'])} open")]
    for a in sec["open"]:
        since = f" since {format_when(a['since'], now)}" if a["since"] else ""
        sent = "" if a["notified"] else " (not notified yet)"
        if a.get("folded_into"):
            sent = f" (folded into {a['folded_into']})"
        lines.append(f"  {_st(a['status'])} {a['key']}{since}{sent}")
        if a["summary"]:
            lines.append(f"  {'':<{WIDTH}}   {a['summary']}")
    return lines


def disks(data: dict[str, Any], now: float) -> list[str]:
    if not data["disks"]:
        return [_head("DISKS", None, "no partition watched or sampled yet ([[watch.disk]])")]
    ranked = [d["status"] for d in data["disks"] if d["status"]]
    worst = max(ranked, key=lambda n: Status[n].severity, default=None)
    lines = [_head("DISKS", worst, "runway from the disk watchdog's history")]
    for d in data["disks"]:
        if not d["samples"]:
            text = f"{d['path']}: no samples yet (rtool watch disk / watch all records them)"
            lines.append(f"  {_st(d['status'])} {text}")
            continue
        lines.append(f"  {_st(d['status'])} {d['path']}: {_usage(d)}, {_runway(d)}")
        age = format_duration(d["last_sample_age_s"])
        lines.append(f"  {'':<{WIDTH}}   {d['samples']} sample(s), last {age} ago")
    return lines


def _usage(d: dict[str, Any]) -> str:
    pct = f"{d['used_pct']:.0f}% used, " if d["used_pct"] is not None else ""
    return f"{pct}{format_size(d['free_bytes'])} free"


def _runway(d: dict[str, Any]) -> str:
    rate = d["growth_per_day_bytes"]
    if rate is None:
        return f"runway: not enough history yet (needs {format_duration(d['trend_min_span_s'])})"
    if d["runway_s"] is None:
        return f"not filling ({format_size(rate)}/day)"
    return f"full in ~{format_duration(d['runway_s'])} at {format_size(rate)}/day"


def memory(data: dict[str, Any], now: float) -> list[str]:
    m = data["memory"]
    avail, total = format_size(m["available_bytes"]), format_size(m["total_bytes"])
    swap = f", swap {m['swap_used_pct']:.0f}% used" if m["swap_used_pct"] is not None else ""
    text = f"node {m['used_pct']:.0f}% used ({avail} of {total} available){swap}"
    return [_head("MEMORY", m["status"], text)]


def switches(data: dict[str, Any], now: float) -> list[str]:
    sec = data["switches"]
    lines = [_head("SWITCHES", sec["status"], "kill: save and stop; save: checkpoint, go on")]
    if not sec["switches"]:
        lines.append("  none yet: each run gets its own at rtool submit")
    for s in sec["switches"]:
        state = "UNKNOWN" if s["present"] is None else ("SET" if s["present"] else "not set")
        runs = ", ".join(f"{j['job_name']} job {j['job_id']}" for j in s["jobs"])
        who = f"{s['source']}; {runs}" if runs else s["source"]
        lines.append(f"  {s['which']:<5} {state:<8} {s['path']}  ({who})")
        if s.get("error"):
            lines.append(f"  {'':<5} {'':<8} {s['error']}")
    return lines


def nodes(data: dict[str, Any], now: float) -> list[str]:
    suspects = data["nodes"]["suspects"]
    if not suspects:
        return []
    lines = [_head("NODES", None, f"{len(suspects)} suspect, kept off your runs (rtool nodes)")]
    for s in suspects:
        runs = ", ".join(s["runs"]) or "-"
        since = format_when(s["since"], now)
        lines.append(f"  {s['node']}  {s['why']}  since {since}; runs: {runs}")
    return lines


def outbox(data: dict[str, Any], now: float) -> list[str]:
    box = data["outbox"]
    note = f"{box['queued']} queued"
    if box["oldest_age_s"] is not None:
        note += f", oldest {format_duration(box['oldest_age_s'])} old"
    lines = [_head("OUTBOX", box["status"], note)]
    for name, ch in box["channels"].items():
        conf = "" if ch["configured"] else " (not configured)"
        last = format_when(ch["last_delivery"], now)
        lines.append(
            f"  {name}{conf}: {ch['queued']} queued, {ch['sent']} sent, last delivery {last}"
        )
        if ch["last_error"]:
            err_at = format_when(ch["last_error_time"], now) if ch["last_error_time"] else ""
            lines.append(f"    last error {err_at}: {ch['last_error']}".replace(" :", ":"))
    return lines


#: The screen's sections, in order (the status page shows them too, titled by name).
PARTS = (jobs, cron, alerts, disks, memory, switches, outbox, nodes)
