"""The few Slurm calls the in-loop shim makes: EndTime lookup, hold and cancel of pending tasks.

The shim reads Slurm's output with the core's pure parsers (`rtool.core.slurm.parse`), but
its calls are the one documented exception to "every subprocess goes through
rtool.core.proc": they call
`subprocess.run(..., timeout=...)` directly (with `SLURM_TIME_FORMAT=standard`, as every Slurm
call of rtool), never raise, and log a warning when a call fails.
"""

from __future__ import annotations

import logging
import os
import subprocess

log = logging.getLogger("rtool.shim")

#: Seconds any scontrol/scancel call of the shim may take.
SLURM_TIMEOUT = 15.0


def parse_end_time(show_job: str, job_id: str | None = None) -> float | None:
    """Unix time of `EndTime=` in `scontrol show job` output (local time), or None. `job_id`:
    the job whose record counts (`123`, or `88_3` for an array task) when the output holds
    several: `scontrol show job <array id>` lists every task of the array, and Slurm gives the
    array's own id to its last task, so the first record may be another, finished task."""
    # imported when asked (rarely: Slurm exports the end time), so `import rtool.shim` stays light
    from rtool.core.slurm.parse import ParseError, parse_scontrol_show_job, parse_slurm_timestamp

    record = own_record(parse_scontrol_show_job(show_job), job_id)
    if record is None:
        return None
    try:
        stamp = parse_slurm_timestamp(record.get("EndTime", ""))
    except ParseError:
        return None
    return stamp.timestamp() if stamp is not None else None


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
    """stdout of `argv`, or None (logged) when it fails, is missing or times out."""
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            env={**os.environ, "SLURM_TIME_FORMAT": "standard"},  # EndTime= must parse
        )
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
    """When the job's time limit ends: the earlier of `EndTime=` from scontrol (it follows
    `scontrol update TimeLimit=...`) and $SLURM_JOB_END_TIME (exported by 24.11, not 22.05;
    fixed when the job started); either one when the other is missing. An array task is
    looked up as `<array>_<task>` (own_job_id). Called from the monitor thread only (it runs
    scontrol)."""
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
