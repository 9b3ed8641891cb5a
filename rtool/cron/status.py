"""`rtool cron status`: the chain's Slurm jobs, last and next tick, and every job's last run
(formatting is pure)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rtool.core.slurm import SqueueJob
from rtool.core.units import format_when


def _when(t: Any, now: float) -> str:
    return format_when(t, now, missing="-")


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
        lines.append(f"last tick:  {_when(beat.get('time'), now)}{late_s}")
        lines.append(f"next tick:  {_when(beat.get('next_slot'), now)}")
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
