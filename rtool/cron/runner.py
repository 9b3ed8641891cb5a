"""Running one job: an executable or a cron.d command (inside the scheduler's job, with a
timeout, output to a log file), or a `*.slurm` file (submitted with sbatch); and removing old
log files so they never eat the inode quota."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rtool.core.proc import ProcError, ProcTimeout, run
from rtool.core.slurm import Slurm, SlurmError
from rtool.cron.jobs import Job

log = logging.getLogger(__name__)

#: Slurm states after which a submitted job will not run again, and whether they mean success.
FINAL_STATES = {
    "COMPLETED": True,
    "FAILED": False,
    "TIMEOUT": False,
    "CANCELLED": False,
    "NODE_FAIL": False,
    "OUT_OF_MEMORY": False,
    "BOOT_FAIL": False,
    "DEADLINE": False,
    "PREEMPTED": False,
}
_OUTPUT_RE = re.compile(r"^#SBATCH\s+(-o\b|--output\b)", re.MULTILINE)
_NAME_RE = re.compile(r"^#SBATCH\s+(-J\b|--job-name\b)", re.MULTILINE)


@dataclass
class JobResult:
    name: str
    kind: str
    status: str  # ok | failed | timeout | error | submitted
    start: float
    duration: float
    exit_code: int | None = None
    log: str | None = None
    job_id: str | None = None
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "timeout", "error")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def log_slug(name: str) -> str:
    """`cron.hourly/check.sh` -> `hourly-check.sh` (safe as a file name)."""
    slug = name.removeprefix("cron.").replace("/", "-").replace(":", "-")
    return re.sub(r"[^A-Za-z0-9._-]", "_", slug)


def run_job(
    job: Job, root: Path, *, timeout: float, slurm: Slurm, env: dict[str, str] | None = None
) -> JobResult:
    """Run or submit `job` (`env`: added to the tick's environment); never raises for the
    job's own failure. A job file runs from a private copy of the bytes the scan checked
    (never from its path again: a file renamed over it since does not run)."""
    if job.kind == "slurm":
        with private_copy(job) as copy:
            return submit(job, root, slurm, copy)
    env = dict(env or {})
    env.update({"RTOOL_CRON_DIR": str(root), "RTOOL_CRON_JOB": job.name})
    if job.kind == "line" and job.line is not None:
        env.update(job.line.env)
        return execute(job, ["/bin/sh", "-c", job.line.command], env, root, timeout)
    with private_copy(job) as copy:
        env["RTOOL_CRON_JOB_FILE"] = str(job.path)
        return execute(job, [str(copy)], env, root, timeout)


@contextlib.contextmanager
def private_copy(job: Job) -> Iterator[Path]:
    """The checked bytes of `job` in a fresh 0700 folder only you can open, removed after."""
    if job.content is None:
        raise ValueError(f"{job.name} was not read by a scan")
    folder = tempfile.mkdtemp(prefix="rtool-cron-")
    try:
        copy = Path(folder) / job.path.name
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
        with os.fdopen(fd, "wb") as f:
            f.write(job.content)
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def execute(
    job: Job, argv: list[str], env: dict[str, str], root: Path, timeout: float
) -> JobResult:
    start = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(start))
    logfile = root / "logs" / f"{log_slug(job.name)}.{stamp}.log"
    out, code, status, message = "", None, "ok", ""
    try:
        res = run(argv, timeout=timeout, check=False, env=env, cwd=str(root))
        out = _combined(res.stdout, res.stderr)
        code = res.returncode
        if code != 0:
            status, message = "failed", f"exit code {code}"
    except ProcTimeout:
        status, message = "timeout", f"timed out after {timeout:g}s (killed)"
    except (ProcError, OSError, UnicodeDecodeError) as exc:
        status, message = "error", f"could not run: {exc}"
    duration = time.time() - start
    footer = f"== {job.name}: {message or 'ok'} after {duration:.1f}s\n"
    _write_log(logfile, out + footer)
    return JobResult(job.name, job.kind, status, start, duration, code, str(logfile), None, message)


def submit(job: Job, root: Path, slurm: Slurm, copy: Path) -> JobResult:
    start = time.time()
    text = (job.content or b"").decode("utf-8", errors="replace")
    own_output = bool(_OUTPUT_RE.search(text))
    # sbatch names a job after its script: the file's own name, not the private copy's
    args = [] if _NAME_RE.search(text) else [f"--job-name={job.path.name}"]
    logfile = None
    if not own_output:
        logfile = str(root / "logs" / f"{log_slug(job.name)}.%j.log")
        args.append(f"--output={logfile}")
    try:
        res = slurm.sbatch(args, script_path=str(copy), cwd=str(root))
    except SlurmError as exc:
        return JobResult(
            job.name, job.kind, "error", start, time.time() - start, message=f"sbatch failed: {exc}"
        )
    if logfile:
        logfile = logfile.replace("%j", res.job_id)
    msg = f"submitted as job {res.job_id}"
    return JobResult(
        job.name, "slurm", "submitted", start, time.time() - start, None, logfile, res.job_id, msg
    )


def slurm_outcome(record: dict[str, str]) -> tuple[str, int | None] | None:
    """(status, exit code) of a finished Slurm job from its `scontrol show job` record;
    None while it is pending or running."""
    state = record.get("JobState", "").split()[0] if record.get("JobState") else ""
    if state not in FINAL_STATES:
        return None
    head = record.get("ExitCode", "").split(":")[0]
    code = int(head) if head.isdigit() else None
    if FINAL_STATES[state]:
        return "ok", code
    return ("timeout" if state == "TIMEOUT" else "failed"), code


def _combined(stdout: str, stderr: str) -> str:
    """stdout then stderr, each ending in a line break."""
    return "".join(s if s.endswith("\n") else s + "\n" for s in (stdout, stderr) if s)


def _write_log(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        log.warning("cannot write log %s: %s", path, exc.strerror)


def expired(files: Iterable[tuple[Path, float]], now: float, keep: float) -> list[Path]:
    """The files (path, mtime) last modified more than `keep` seconds before `now` (pure)."""
    return [path for path, mtime in files if now - mtime > keep]


def log_files(logs: Path) -> list[tuple[Path, float]]:
    """(path, mtime) of every regular file under `logs` (symlinks are not followed)."""
    found = []
    for dirpath, _dirs, names in os.walk(logs):
        for name in names:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if not path.is_symlink():
                found.append((path, st.st_mtime))
    return found


def remove_old_logs(logs: Path, now: float, keep: float) -> list[Path]:
    """Remove log files older than `keep`; returns what was removed."""
    removed = []
    for path in expired(log_files(logs), now, keep):
        try:
            path.unlink()
            removed.append(path)
        except OSError as exc:
            log.warning("cannot remove old log %s: %s", path, exc.strerror)
    return removed
