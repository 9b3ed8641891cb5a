"""How long a stop of this training took to end its job, learned from the batch script's records
of earlier attempts ($RTOOL_RUN_RECORDS): the lead before the time limit must leave that much.

A stop is not over when the save returns: every rank's process ends, the launcher (srun,
torchrun) ends its step, the batch shell writes its end record and exits. A wide launch takes
seconds for that (16 ranks: 8-12 s on the project's VM), so a fixed slack lets Slurm's time
limit cut the job (TIMEOUT, and a requeue the shim asked for is lost).
"""

from __future__ import annotations

import json
import math
import os
import stat

from rtool.core.identity import trusted_uid

#: What is read of the records: their tail (one line per start or end of an attempt).
RECORDS_TAIL = 64 * 1024
#: A longer time from a stop to the end record is not the exit (the shell waited on something).
MAX_EXIT = 600.0


def exit_need(path: str | None) -> float:
    """The longest time (seconds) from a stop the shim made (its heartbeat's `stop_time`) to the
    batch shell's end record of that attempt, over the records' last RECORDS_TAIL bytes; 0.0
    when none is known, or the file is missing, unreadable, a symlink, or not trusted (another
    user's, or writable by others: its numbers could then stretch every stop)."""
    if not path:
        return 0.0
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return 0.0
    try:
        st = os.fstat(fd)
        if not _trusted(st):
            return 0.0
        raw = os.pread(fd, RECORDS_TAIL, max(0, st.st_size - RECORDS_TAIL))
    except OSError:
        return 0.0
    finally:
        os.close(fd)
    return longest_exit(raw.decode("utf-8", errors="replace").splitlines())


def _trusted(st: os.stat_result) -> bool:
    """A regular file of yours (or root's) that nobody else may write: rtool.core.safeio's
    trust rule on the descriptor's fstat (the shim does not import safeio: it stays light)."""
    return stat.S_ISREG(st.st_mode) and trusted_uid(st.st_uid) and not st.st_mode & 0o022


def longest_exit(lines: list[str]) -> float:
    """The longest stop-to-end time of the records' lines (see `exit_need`); a line that is not
    a record, or an end whose heartbeat's stop is not of that attempt, counts nothing."""
    started: dict[tuple[object, object], float] = {}
    best = 0.0
    for line in lines:
        rec = _record(line)
        if rec is None:
            continue
        key, at = (rec.get("job_id"), rec.get("restart")), _number(rec.get("time"))
        if rec.get("event") == "start" and at is not None:
            started[key] = at
        elif rec.get("event") == "end" and key in started:
            best = max(best, _took(rec, started.pop(key)))
    return best


def _record(line: str) -> dict[str, object] | None:
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return rec if isinstance(rec, dict) else None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _took(end: dict[str, object], start: float) -> float:
    """Seconds from the attempt's stop to its end record: 0.0 unless its heartbeat says the shim
    stopped it, in this job, after the attempt started (not a heartbeat carried from before)."""
    hb = end.get("heartbeat")
    if not isinstance(hb, dict) or hb.get("state") != "stopped":
        return 0.0
    if hb.get("stop_job_id") != end.get("job_id"):
        return 0.0
    stop, ended = _number(hb.get("stop_time")), _number(end.get("time"))
    if stop is None or ended is None or not start <= stop <= ended:
        return 0.0
    took = ended - stop
    return took if took <= MAX_EXIT else 0.0
