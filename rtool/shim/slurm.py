"""The few Slurm calls the in-loop shim makes: EndTime lookup, hold and cancel of pending tasks,
and whether Slurm is preempting the job (its save bound and detail: `Preemption`).

They are the one documented exception to "every subprocess goes through rtool.core.proc": they
call `subprocess.run(..., timeout=...)` directly (with `SLURM_TIME_FORMAT=standard`, as every
Slurm call of rtool), never raise, and log a warning when a call fails. Their output is read with
the core's pure parsers (`rtool.core.slurm.parse`).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime

log = logging.getLogger("rtool.shim")

#: Seconds any scontrol/scancel call of the shim may take.
SLURM_TIMEOUT = 15.0


def parse_end_time(show_job: str, job_id: str | None = None) -> float | None:
    """Unix time of `EndTime=` in `scontrol show job` output (local time), or None. `job_id`:
    the job whose record counts (`123`, or `88_3` for an array task) when the output holds
    several: `scontrol show job <array id>` lists every task of the array, and Slurm gives the
    array's own id to its last task, so the first record may be another, finished task."""
    found = _record_times(show_job, job_id, "EndTime")
    stamp = found[1][0] if found is not None else None
    return stamp.timestamp() if stamp is not None else None


def _record_times(
    show_job: str, job_id: str | None, *keys: str
) -> tuple[dict[str, str], list[datetime | None]] | None:
    """`job_id`'s record (own_record) and its `keys` as times, or None. The parsers are imported
    when asked (rarely: Slurm exports the end time), so `import rtool.shim` stays light."""
    from rtool.core.slurm.parse import ParseError, parse_scontrol_show_job, parse_slurm_timestamp

    rec = own_record(parse_scontrol_show_job(show_job), job_id)
    if rec is None:
        return None
    try:
        return rec, [parse_slurm_timestamp(rec.get(k, "")) for k in keys]
    except ParseError:
        return None


def own_record(records: list[dict[str, str]], job_id: str | None) -> dict[str, str] | None:
    """The record of `job_id` (`123`: JobId=123; `88_3`: ArrayJobId=88 ArrayTaskId=3) among
    `records`, None when none is; without `job_id`, the only record (None when several)."""
    if job_id is None:
        return records[0] if len(records) == 1 else None
    array, _, task = job_id.partition("_")
    for rec in records:
        if task and rec.get("ArrayJobId") == array and rec.get("ArrayTaskId") == task:
            return rec
        if not task and rec.get("JobId") == job_id:
            return rec
    return None


def own_job_id(job_id: str, environ: dict[str, str] | None = None) -> str:
    """How to look up `job_id` when it is the job this process runs in: `<array>_<task>` for an
    array task (the last task runs under the array's own id, which names every task), else
    `job_id` unchanged."""
    env = os.environ if environ is None else environ
    array, task = env.get("SLURM_ARRAY_JOB_ID", ""), env.get("SLURM_ARRAY_TASK_ID", "")
    if job_id == env.get("SLURM_JOB_ID") and array.isdigit() and task.isdigit():
        return f"{array}_{task}"
    return job_id


def run_slurm(argv: list[str], timeout: float = SLURM_TIMEOUT) -> str | None:
    """stdout of `argv`, or None (logged) when it fails, is missing or times out. A query killed
    by a signal is asked once more: Slurm signals every process of the job (a preemption's
    SIGTERM, repeated to the step's tasks), and the query the shim started to learn why it
    got that signal is one of them."""
    try:
        for _ in range(2):
            res = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
                env={**os.environ, "SLURM_TIME_FORMAT": "standard"},  # EndTime= must parse
            )
            if res.returncode >= 0:
                break
    except subprocess.TimeoutExpired:
        log.warning("rtool.shim: %s timed out after %gs", " ".join(argv), timeout)
        return None
    except OSError as exc:
        log.warning("rtool.shim: cannot run %s: %s", argv[0], exc)
        return None
    if res.returncode != 0:
        log.warning(
            "rtool.shim: %s failed (%d): %s", " ".join(argv), res.returncode, res.stderr.strip()
        )
        return None
    return res.stdout


def job_end_time(job_id: str, timeout: float = SLURM_TIMEOUT) -> float | None:
    """When the job's time limit ends: the earlier of scontrol's `EndTime=` (it follows `scontrol
    update TimeLimit=...`) and $SLURM_JOB_END_TIME (24.11, not 22.05; fixed at the job's start),
    either alone when the other is missing. Monitor thread only (it runs scontrol)."""
    exported = os.environ.get("SLURM_JOB_END_TIME", "")
    ends = []
    if exported.isdigit() and os.environ.get("SLURM_JOB_ID") == job_id:
        ends.append(float(exported))
    lookup = own_job_id(job_id)
    out = run_slurm(["scontrol", "show", "job", lookup], timeout)
    asked = parse_end_time(out, lookup) if out is not None else None
    if asked is not None:
        ends.append(asked)
    return min(ends) if ends else None


def hold_pending(array_job_id: str, timeout: float = SLURM_TIMEOUT) -> bool:
    """User-hold the pending tasks of an array (`scontrol uhold`): the user can release them."""
    return run_slurm(["scontrol", "uhold", array_job_id], timeout) is not None


def cancel_pending(array_job_id: str, timeout: float = SLURM_TIMEOUT) -> bool:
    """Cancel only the PENDING tasks of an array; the running task is left alone."""
    return run_slurm(["scancel", "--state=PENDING", array_job_id], timeout) is not None


#: Seconds the preemption lookup (two scontrol calls) may take on the way out.
PREEMPT_TIMEOUT = 5.0


@dataclass(frozen=True)
class Preemption:
    """Slurm is preempting this job: since `at` (Unix time), with the partition's GraceTime."""

    at: float
    partition: str
    grace: float  # seconds (0: Slurm's default, TERM and KILL after KillWait at once)

    def left(self, now: float) -> float | None:
        """Seconds of the grace left at `now` (None with GraceTime 0)."""
        return max(0.0, self.grace - (now - self.at)) if self.grace > 0 else None

    def _grace(self) -> str:
        return f"partition {self.partition or '?'}, GraceTime {self.grace:g}s"

    def save_bound(self, save_timeout: float, measured: float) -> float:
        """Seconds the stop's save may take (the forced exit's timeout), said in the log: what
        is left of the partition's GraceTime when that is shorter than `save_timeout`
        (docs/shim.md), with the longest save measured."""
        left = self.left(time.time())
        seen = f"; the longest save measured took {measured:.1f}s" if measured else ""
        if left is None or (save_timeout > 0 and left >= save_timeout):
            log.warning(
                "rtool.shim: Slurm is preempting this job (%s): the save is bounded by "
                "save_timeout %gs%s",
                self._grace(),
                save_timeout,
                seen,
            )
            return save_timeout
        log.warning(
            "rtool.shim: Slurm is preempting this job (%s): the save has the %.1fs left of the "
            "grace%s",
            self._grace(),
            left,
            seen,
        )
        if measured > left:
            log.warning(
                "rtool.shim: the save (%.1fs) is longer than the grace left (%.1fs): ask for a "
                "longer GraceTime or save more often (save_every)",
                measured,
                left,
            )
        return max(1.0, left)

    def detail(self, signal: str | None) -> str:
        """The stop's detail: `SIGTERM while Slurm preempts the job (since 15:35:05, ...)`."""
        sig = signal or "a signal seen on another rank"
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        return f"{sig} while Slurm preempts the job (since {when}, {self._grace()})"


def parse_preemption(
    show_job: str, now: float, restart: int, job_id: str | None = None
) -> tuple[float, str, bool] | None:
    """(since when, Partition, PreemptTime set) of `scontrol show job` output when the job is
    being preempted (PreemptTime set) or was requeued while attempt `restart` runs (its
    `Restarts=` is higher: GraceTime 0, the job COMPLETING; since `now`), else None. The
    record read is `job_id`'s when the output holds several (own_record)."""
    found = _record_times(show_job, job_id, "PreemptTime", "StartTime")
    if found is None:
        return None
    rec, (stamp, started) = found
    part = rec.get("Partition", "")
    if stamp is not None and (started is None or stamp >= started):  # not an earlier attempt's
        return stamp.timestamp(), part, True
    restarts = rec.get("Restarts", "")
    return (now, part, False) if restarts.isdigit() and int(restarts) > restart else None


def preemption(job_id: str, restart: int, timeout: float = PREEMPT_TIMEOUT) -> Preemption | None:
    """The job's preemption when Slurm is preempting it (the grace from `scontrol show
    partition`), else None; a job requeued while running counts only on a partition whose
    PreemptMode requeues. Two scontrol calls, each bounded."""
    from rtool.core.slurm.partition import parse_partitions

    lookup = own_job_id(job_id)  # the last array task: its own record, not the array's
    out = run_slurm(["scontrol", "show", "job", lookup], timeout)
    found = parse_preemption(out, time.time(), restart, lookup) if out is not None else None
    if found is None:
        return None
    at, part, marked = found
    text = run_slurm(["scontrol", "show", "partition", part], timeout) if part else None
    parts = parse_partitions(text) if text is not None and "," not in part else []
    if not marked and not (parts and parts[0].requeues):
        return None  # requeued by hand or by a watchdog, not preempted
    return Preemption(at, part, parts[0].grace if parts else 0.0)
