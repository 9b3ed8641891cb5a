"""The batch script's own start/end records of each attempt (degraded mode's ground truth).

`rtool record start|end` (`rtool.runs.attempt_record_writer`) appends one JSON line per event to
`$RTOOL_RUN_RECORDS` (default `<heartbeat>.attempts`). Read back bounded, from a trusted regular
file only (`rtool.runs.logtail`), every line validated: at most `MAX_LINE` bytes, split on `\\n`
only (a `\\r`, a Unicode line separator or a control character makes the line bad), no
duplicate JSON key at any depth, only known keys with their exact types. A bad line is skipped
with a warning and never acted on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.runs.logtail import read_tail_cut

log = logging.getLogger(__name__)

RECORDS_SUFFIX = ".attempts"
#: The most of a records file read (its end): ~45,000 attempts at ~370 bytes per attempt.
RECORDS_BYTES = 16 * 1024 * 1024
#: The longest record line rtool writes (a heartbeat copy included) and accepts.
MAX_LINE = 16 * 1024
#: The keys of a record line; `event`, `job_id` and `time` are required.
KEYS = frozenset(
    {"event", "job_id", "array_job_id", "array_task_id", "restart", "node", "nodelist", "time"}
    | {"rc", "heartbeat"}
)
#: Bad lines named in the warning (the count covers the rest).
MAX_REPORTED = 3
DIGITS = re.compile(r"[0-9]{1,12}", re.ASCII)
NODE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}", re.ASCII)
HOSTLIST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-\[\],]{0,4095}", re.ASCII)
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def shown_id(job_id: str | None, array_job_id: str | None, task: object) -> str | None:
    """The id squeue and sacct show: `88_3` for an array task, else the job id."""
    if array_job_id and task not in (None, ""):
        return f"{array_job_id}_{task}"
    return job_id


def heartbeat_key(hb: Heartbeat | None) -> tuple[str, int] | None:
    """The attempt a heartbeat is of: (its shown id, its restart count); None without a job id."""
    if hb is None:
        return None
    job = shown_id(hb.job_id, hb.array_job_id, hb.array_task_id)
    return (job, hb.restart_count) if job else None


class RecordError(ValueError):
    """A record line that rtool did not write (one line naming the problem)."""


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
        return shown_id(self.job_id, self.array_job_id, self.array_task_id) or self.job_id

    @property
    def nodes(self) -> tuple[str, ...]:
        """The attempt's nodes (the node list was checked to expand within the cap)."""
        if self.nodelist:
            return tuple(expand_hostlist(self.nodelist))
        return (self.node,) if self.node else ()

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "heartbeat": self.heartbeat.to_dict() if self.heartbeat else None}

    def to_line(self) -> str:
        """The record as one line (ASCII JSON, no newline inside); raises RecordError when it
        would not read back (the caller drops the heartbeat copy and tries again)."""
        line = json.dumps(self.to_json(), sort_keys=True, ensure_ascii=True, allow_nan=False)
        parse_record(line)  # what rtool writes is exactly what it accepts
        return line


@dataclass
class Records:
    """The records read from one file, and the lines skipped as bad (why, by line)."""

    records: list[BatchRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: Bytes at the start of the file not read (past RECORDS_BYTES): their attempts are only in
    #: the stored ledger.
    cut: int = 0

    def note(self) -> str:
        notes = []
        if self.cut:
            notes.append(f"the first {self.cut} bytes of the records not read (older attempts)")
        if self.skipped:
            shown = "; ".join(self.skipped[:MAX_REPORTED])
            notes.append(f"{len(self.skipped)} bad record line(s) skipped ({shown})")
        return "; ".join(notes)


def records_path(heartbeat: str | None, explicit: str | None = None) -> str | None:
    if explicit:
        return explicit
    return f"{heartbeat}{RECORDS_SUFFIX}" if heartbeat else None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RecordError(f"duplicate key {key[:40]!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise RecordError(f"{name} is not a number")


def _int(d: dict[str, Any], key: str, low: int, high: int) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise RecordError(f"{key}: expected a whole number {low}..{high}")
    return v


def opt_digits(d: dict[str, Any], key: str) -> str | None:
    """An optional id: digits, or "" / null for none (the first prelude wrote "")."""
    v = d.get(key)
    if v is None or v == "":
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str) or not DIGITS.fullmatch(v):
        raise RecordError(f"{key}: expected digits")
    return v


def _text(d: dict[str, Any], key: str, pattern: re.Pattern[str]) -> str:
    v = d.get(key)
    if v is None or v == "":
        return ""
    if not isinstance(v, str) or not pattern.fullmatch(v):
        raise RecordError(f"{key}: not a node name or list")
    return v


def belongs(hb: Heartbeat, rec: BatchRecord) -> bool:
    """Whether the heartbeat was written by the attempt of this record (same job, restart)."""
    ids = {hb.job_id, f"{hb.array_job_id}_{hb.array_task_id}"}
    mine = rec.job_id in ids or (rec.array_job_id is not None and rec.shown_id in ids)
    return mine and hb.restart_count == rec.restart


def _heartbeat(raw: Any, rec: BatchRecord) -> Heartbeat:
    try:
        hb = Heartbeat.from_dict(raw)
    except HeartbeatFormatError as exc:
        raise RecordError(str(exc)[:200]) from None
    if not belongs(hb, rec):
        raise RecordError("heartbeat: of another attempt")
    return hb


def _decode(line: str) -> dict[str, Any]:
    if len(line.encode("utf-8", "surrogatepass")) > MAX_LINE:
        raise RecordError(f"longer than {MAX_LINE} bytes")
    if _BAD_CHARS.search(line):
        raise RecordError("a control character or line separator in the line")
    try:
        d = json.loads(line, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except RecursionError:
        raise RecordError("nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError("not JSON") from None
    if not isinstance(d, dict):
        raise RecordError("not a JSON object")
    unknown = sorted(set(d) - KEYS)
    if unknown:
        raise RecordError(f"unknown key {unknown[0][:40]!r}")
    return d


def parse_record(line: str) -> BatchRecord:
    """The record in one line; raises RecordError (naming the problem) for any other line."""
    d = _decode(line)
    event = d.get("event")
    if event not in ("start", "end"):
        raise RecordError("event: expected start or end")
    job = opt_digits(d, "job_id")
    if job is None:
        raise RecordError("job_id: missing")
    t = d.get("time")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise RecordError("time: expected seconds since the epoch")
    array, task = opt_digits(d, "array_job_id"), opt_digits(d, "array_task_id")
    rc = _int(d, "rc", 0, 255)
    if event == "start" and (rc is not None or d.get("heartbeat") is not None):
        raise RecordError("a start record with an exit code or a heartbeat")
    rec = BatchRecord(
        event=event,
        job_id=job,
        array_job_id=array,
        array_task_id=int(task) if task is not None else None,
        restart=_int(d, "restart", 0, 1_000_000) or 0,
        node=_text(d, "node", NODE),
        nodelist=_text(d, "nodelist", HOSTLIST),
        time=float(t),
        rc=rc,
        heartbeat=None,
    )
    try:
        rec.nodes  # noqa: B018 - expands within the cap, or the line is bad
    except ParseError as exc:
        raise RecordError(f"nodelist: {exc}") from None
    if d.get("heartbeat") is not None:
        rec = dataclasses.replace(rec, heartbeat=_heartbeat(d["heartbeat"], rec))
    return rec


def parse_records(text: str, where: str = "records") -> Records:
    """Every line of `text` (split on `\\n` only), the bad ones skipped with a warning."""
    out = Records()
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.records.append(parse_record(line))
        except RecordError as exc:
            out.skipped.append(f"line {number}: {exc}")
    if out.skipped:
        log.warning("%s: %s", where, out.note())
    return out


def read_records(path: str, limit: int = RECORDS_BYTES) -> Records:
    """The records in `path` (none when there is no file). Raises OSError on an unsafe file."""
    try:
        text, cut = read_tail_cut(path, limit)
    except FileNotFoundError:
        return Records()
    got = parse_records(text, path)
    got.cut = cut
    return got
