"""The training's restarts inside its allocation: their records, and the ledger's entries.

Before the batch script restarts a crashed or hung training in place, `rtool preflight
--restart-after RC` (rtool/nodes/restart.py) appends one JSON line to the run's restart records,
`<records>.restarts` (0600, never through a link; the fields: docs/runs.md). Read back bounded,
from a trusted file only; a line that is not such a record is skipped. The ledger makes one
`InPlaceRestart` of each, completed by the heartbeat of the launch that followed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError
from rtool.core.slurm import expand_hostlist
from rtool.core.slurm.parse import ParseError
from rtool.runs.attempt_records import HOSTLIST, MAX_LINE, opt_digits, shown_id
from rtool.runs.logtail import read_tail

RESTARTS_BYTES = 256 * 1024
CAUSES = ("hung", "peer_failed", "crashed", "oom_kill", "signal", "exit", "node_failure")


@dataclass(frozen=True)
class InPlaceRestart:
    """One in-place restart: an entry of its own in the run's ledger, beside the attempt (job,
    restart) it happened in, from its record and the heartbeats of the launches around it."""

    run: str
    job_id: str  # the attempt's job id as Slurm shows it ("88_3")
    restart: int  # the attempt's Slurm restart count
    launch: int  # the launch it started (1: the first in-place restart of the attempt)
    time: float  # when the batch script decided to restart (the failed launch had ended)
    exit_code: int | None = None  # of the failed launch (srun's, or the launcher's)
    cause: str = "crashed"  # hung, crashed, oom_kill, peer_failed, signal, exit
    detail: str = ""  # "RuntimeError: CUDA error ...", "no step for 8.0s after step 850"
    nodes: tuple[str, ...] = ()
    fault_at: float | None = None  # the failed launch's last progress (its heartbeat's time)
    process_started: float | None = None  # when the failed launch's guard was made
    process_start_step: int | None = None  # the first step the failed launch ran
    step_reached: int | None = None  # the last step the failed launch ran
    last_saved_step: int | None = None  # the checkpoint the restart resumes from
    resumed_step: int | None = None  # the first step the restarted launch ran
    back_at: float | None = None  # when the restarted launch made its first step

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.job_id, self.restart, self.launch)

    @property
    def attempt_key(self) -> tuple[str, int]:
        return (self.job_id, self.restart)

    @property
    def steps_redone(self) -> int | None:
        """Steps the failed launch ran that the restarted one runs again."""
        if self.step_reached is None or self.resumed_step is None:
            return None
        return max(0, self.step_reached - self.resumed_step + 1)

    @property
    def lost_s(self) -> float | None:
        """From the failed launch's last step to the restarted launch's first step."""
        if self.back_at is None or self.fault_at is None:
            return None
        return max(0.0, self.back_at - self.fault_at)

    @property
    def progress(self) -> int | None:
        """Steps the failed launch moved the run forward (None when unknown)."""
        if self.step_reached is None or self.process_start_step is None:
            return None
        return max(0, self.step_reached - self.process_start_step)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["nodes"] = list(self.nodes)
        d["steps_redone"], d["lost_s"] = self.steps_redone, self.lost_s
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> InPlaceRestart:
        known = {f.name for f in fields(InPlaceRestart)}
        values = {k: v for k, v in d.items() if k in known}
        values["nodes"] = tuple(values.get("nodes") or ())
        return InPlaceRestart(**values)


#: In-place restart entries a ledger keeps (the newest).
MAX_RESTARTS = 200


@dataclass(frozen=True)
class RestartRecord:
    job_id: str  # SLURM_JOB_ID
    array_job_id: str | None
    array_task_id: int | None
    restart: int  # SLURM_RESTART_COUNT
    node: str
    nodelist: str
    time: float
    rc: int
    launch: int  # the launch this restart starts (1, 2, ...)
    cause: str  # one of CAUSES
    detail: str
    heartbeat: Heartbeat | None = None  # the failed launch's, when it wrote one
    oom_kills: int | None = None  # OOM kills the job's memory cgroup counted so far

    @property
    def shown_id(self) -> str:
        return shown_id(self.job_id, self.array_job_id, self.array_task_id) or self.job_id

    @property
    def nodes(self) -> tuple[str, ...]:
        try:
            return tuple(expand_hostlist(self.nodelist)) if self.nodelist else (self.node,)
        except ParseError:
            return (self.node,)

    def to_line(self) -> str:
        d: dict[str, Any] = {"event": "restart", **self.__dict__}
        d["heartbeat"] = self.heartbeat.to_dict() if self.heartbeat else None
        d["detail"] = self.detail[:500]
        line = json.dumps(d, sort_keys=True, ensure_ascii=True, allow_nan=False)
        if len(line) > MAX_LINE:  # the heartbeat copy is what can be large: drop it
            d["heartbeat"] = None
            line = json.dumps(d, sort_keys=True, ensure_ascii=True, allow_nan=False)
        return line


def restarts_path(records: str) -> str:
    """The restart records beside the attempt records (`x.attempts` -> `x.restarts`)."""
    base = records[: -len(".attempts")] if records.endswith(".attempts") else records
    return f"{base}.restarts"


def _int(d: Mapping[str, Any], key: str, low: int, high: int) -> int:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ValueError(key)
    return v


def parse_line(line: str) -> RestartRecord | None:
    """The record in one line, or None for any other line (torn, foreign, malformed)."""
    if len(line) > MAX_LINE:
        return None
    try:
        d = json.loads(line)
        if not isinstance(d, dict) or d.get("event") != "restart":
            return None
        job = opt_digits(d, "job_id")
        task = opt_digits(d, "array_task_id")
        t, cause = d.get("time"), d.get("cause")
        node, nodelist = d.get("node") or "", d.get("nodelist") or ""
        if job is None or isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0:
            return None
        if cause not in CAUSES or not isinstance(node, str) or not isinstance(nodelist, str):
            return None
        if any(x and not HOSTLIST.fullmatch(x) for x in (node, nodelist)):
            return None
        hb = Heartbeat.from_dict(d["heartbeat"]) if d.get("heartbeat") is not None else None
        return RestartRecord(
            job_id=job,
            array_job_id=opt_digits(d, "array_job_id"),
            array_task_id=int(task) if task is not None else None,
            restart=_int(d, "restart", 0, 1_000_000),
            node=node,
            nodelist=nodelist,
            time=float(t),
            rc=_int(d, "rc", 0, 255),
            launch=_int(d, "launch", 1, 1_000_000),
            cause=cause,
            detail=str(d.get("detail") or "")[:500],
            heartbeat=hb,
            oom_kills=_int(d, "oom_kills", 0, 1 << 40) if d.get("oom_kills") is not None else None,
        )
    except (ValueError, TypeError, KeyError, HeartbeatFormatError):
        return None


def read_restarts(path: str, limit: int = RESTARTS_BYTES) -> list[RestartRecord]:
    """The records in `path` ([] when there is none). Raises OSError on an unsafe file."""
    try:
        text = read_tail(path, limit)
    except FileNotFoundError:
        return []
    return [r for line in text.split("\n") if line.strip() and (r := parse_line(line))]


def append(path: str, rec: RestartRecord) -> None:
    """Append one record (0600, never through a link, a regular file of yours only)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise OSError(f"{path}: not a regular file of yours")
        os.write(fd, (rec.to_line() + "\n").encode())
    finally:
        os.close(fd)


def entries(
    run: str, records: Iterable[RestartRecord], beats: Iterable[Heartbeat]
) -> list[InPlaceRestart]:
    """One ledger entry per restart record, with the restarted launch's first step from the
    heartbeats (`beats`: every heartbeat known: live, attempt records, restart records)."""
    launches: dict[tuple[str | None, int, int], Heartbeat] = {}
    for hb in beats:
        key = (shown_id(hb.job_id, hb.array_job_id, hb.array_task_id), hb.restart_count, hb.launch)
        if key not in launches or hb.time >= launches[key].time:
            launches[key] = hb
    out = {}
    for rec in records:
        failed, after = rec.heartbeat, launches.get((rec.shown_id, rec.restart, rec.launch))
        ours = failed if failed is not None and failed.launch == rec.launch - 1 else None
        entry = InPlaceRestart(
            run=run,
            job_id=rec.shown_id,
            restart=rec.restart,
            launch=rec.launch,
            time=rec.time,
            exit_code=rec.rc,
            cause=rec.cause,
            detail=rec.detail,
            nodes=rec.nodes,
            fault_at=ours.time if ours else None,
            process_started=ours.started if ours else None,
            process_start_step=ours.step_at_start if ours else None,
            step_reached=ours.step if ours else None,
            last_saved_step=failed.last_saved_step if failed is not None else None,
            resumed_step=after.step_at_start if after is not None else None,
            back_at=after.first_step_time if after is not None else None,
        )
        out[entry.key] = entry
    return sorted(out.values(), key=lambda r: (r.time, r.launch))


def merge(old: Iterable[InPlaceRestart], new: Iterable[InPlaceRestart]) -> list[InPlaceRestart]:
    """The previous ledger's entries with this sweep's on top (a later sweep knows more: the
    restarted launch's first step), a known value never lost, the newest MAX_RESTARTS kept."""
    by = {r.key: r for r in old}
    for r in new:
        prev = by.get(r.key)
        if prev is not None:
            keep = {k: v for k, v in prev.__dict__.items() if getattr(r, k) is None}
            with contextlib.suppress(TypeError):
                r = type(r)(**{**r.__dict__, **keep})
        by[r.key] = r
    return sorted(by.values(), key=lambda r: (r.time, r.launch))[-MAX_RESTARTS:]
