"""The batch script's own start/end records of each attempt (degraded mode's ground truth).

The rtool prelude (rtool/slurm_templates/_rtool_prelude.j2) appends one JSON line per event to
`$RTOOL_RUN_RECORDS` (default `<heartbeat>.attempts`): `start` when the batch script starts,
`end` with the training's exit code and a copy of the heartbeat as it ended. Read back
bounded (the file's last `limit` bytes), from a trusted file only (see `rtool.runs.logtail`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError
from rtool.runs.logtail import read_tail

RECORDS_SUFFIX = ".attempts"
RECORDS_BYTES = 256 * 1024


@dataclass(frozen=True)
class BatchRecord:
    event: str  # "start" or "end"
    job_id: str  # SLURM_JOB_ID (numeric)
    array_job_id: str | None
    array_task_id: int | None
    restart: int
    node: str
    nodelist: str
    time: float
    rc: int | None = None  # end only
    heartbeat: Heartbeat | None = None  # end only: the heartbeat as the attempt ended

    @property
    def shown_id(self) -> str:
        """The id squeue and sacct show: `88_3` for an array task, else the job id."""
        if self.array_job_id and self.array_task_id is not None:
            return f"{self.array_job_id}_{self.array_task_id}"
        return self.job_id


def records_path(heartbeat: str | None, explicit: str | None = None) -> str | None:
    if explicit:
        return explicit
    return f"{heartbeat}{RECORDS_SUFFIX}" if heartbeat else None


def _opt_str(v: Any) -> str | None:
    return str(v) if isinstance(v, (str, int)) and str(v) not in ("", "None") else None


def parse_record(line: str) -> BatchRecord | None:
    """One record, or None for a line that is not one (a torn or foreign line)."""
    try:
        d = json.loads(line)
    except ValueError:
        return None
    if not isinstance(d, dict) or d.get("event") not in ("start", "end"):
        return None
    job = _opt_str(d.get("job_id"))
    if job is None or not job.isdigit():
        return None
    task = _opt_str(d.get("array_task_id"))
    hb = None
    if isinstance(d.get("heartbeat"), dict):
        try:
            hb = Heartbeat.from_dict(d["heartbeat"])
        except HeartbeatFormatError:
            hb = None
    try:
        return BatchRecord(
            event=d["event"],
            job_id=job,
            array_job_id=_opt_str(d.get("array_job_id")),
            array_task_id=int(task) if task and task.isdigit() else None,
            restart=int(d.get("restart") or 0),
            node=str(d.get("node") or ""),
            nodelist=str(d.get("nodelist") or ""),
            time=float(d["time"]),
            rc=int(d["rc"]) if d.get("rc") not in (None, "") else None,
            heartbeat=hb,
        )
    except (KeyError, TypeError, ValueError):
        return None


def parse_records(text: str) -> list[BatchRecord]:
    return [r for line in text.splitlines() if (r := parse_record(line)) is not None]


def read_records(path: str, limit: int = RECORDS_BYTES) -> list[BatchRecord]:
    """The records in `path` ([] when there is no file). Raises OSError on an unsafe file."""
    try:
        return parse_records(read_tail(path, limit))
    except FileNotFoundError:
        return []


def exists(path: str | None) -> bool:
    return bool(path) and os.path.lexists(path or "")
