"""Side effects a result asks for: py-spy stack dumps, requeue, signal, hold. Runner-only.

Each (action, token) pair runs once: a hang that persists across sweeps is acted on once.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import sysconfig
import time
from pathlib import Path
from typing import Any

from rtool.core import validate
from rtool.core.proc import ProcError, ProcNotFound, run
from rtool.core.slurm import Slurm
from rtool.core.slurm.cmd import check_records
from rtool.core.state import StateDir
from rtool.watchdogs.base import Action, ActionKind, CheckResult
from rtool.watchdogs.probes import child

log = logging.getLogger(__name__)

DONE_FILE = "watch/actions-done.json"
MAX_STACKS = 8000
#: Run by `srun --jobid=J --overlap` inside the job: dump every python process of that job (its
#: SLURM_JOB_ID and, when known, its job name $1 in /proc/PID/environ), not every python
#: process of the user on that node.
_JOB_DUMP = """for p in $(pgrep -u "$(id -u)" python); do
  [ "$p" = $$ ] && continue
  e=$(tr '\\0' '\\n' </proc/"$p"/environ 2>/dev/null) || continue
  printf '%s\\n' "$e" | grep -qxF "SLURM_JOB_ID=$SLURM_JOB_ID" || continue
  [ -z "$1" ] || printf '%s\\n' "$e" | grep -qxF "SLURM_JOB_NAME=$1" || continue
  {} dump --pid "$p"
done"""


def py_spy() -> str:
    """The py-spy installed with rtool (a dependency: its wheel puts it beside rtool's own
    scripts, which need not be on PATH under cron or Slurm), else the one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy") or "py-spy"


def dump_argv(action: Action, slurm: Slurm) -> list[str]:
    """`py-spy dump` of a local pid, or `srun` into a job (`1234`, `1234_5`) dumping the python
    processes of that job."""
    if action.pid is not None:
        return [py_spy(), "dump", "--pid", str(action.pid)]
    ident = validate.job_id(action.job)
    records = slurm.show_job(ident)  # raises SlurmError: no dump
    check_records(records, ident, slurm.user)  # srun into another user's job: never (as root)
    record = records[0] if records else {}
    jobid = validate.job_id(record.get("JobId") or ident)
    script = _JOB_DUMP.format(shlex.quote(py_spy()))
    srun = ["srun", f"--jobid={jobid}", "--overlap", "--ntasks-per-node=1"]
    return [*srun, "sh", "-c", script, "rtool-dump", record.get("JobName", "")]


def dump_stacks(action: Action, slurm: Slurm, timeout: float) -> str:
    """The stacks the dump `action` asks for (see `dump_argv`), or why there are none."""
    try:
        argv = dump_argv(action, slurm)
    except (ProcError, validate.ArgvError) as exc:  # a job that is not yours: ForeignJob
        return f"not dumped: {exc}"
    try:
        res = run(argv, timeout=timeout, check=False)
    except ProcNotFound:
        return f"{Path(argv[0]).name} is not installed"
    except ProcError as exc:
        return str(exc)
    text = (res.stdout + res.stderr).strip() or f"no output (exit code {res.returncode})"
    return text[-MAX_STACKS:]


def run_action(action: Action, slurm: Slurm, timeout: float) -> tuple[str, str]:
    """Carry out one action; returns (field name, outcome text)."""
    job = str(action.job)
    try:
        if action.kind is ActionKind.DUMP:
            return "stacks", dump_stacks(action, slurm, timeout)
        if action.kind is ActionKind.REQUEUE:
            slurm.requeue(job)
            return "action", f"requeued job {job}"
        if action.kind is ActionKind.HOLD:
            slurm.hold(job)
            return "action", f"held job {job} (release with: scontrol release {job})"
        if action.kind is ActionKind.SIGNAL:
            slurm.scancel([job], signal=str(action.signal), full=True)
            return "action", f"sent SIG{action.signal} to job {job}"
        if action.kind is ActionKind.DELETE:
            return "retention", delete(action, timeout)
    except ProcError as exc:
        return "action", f"{action} failed: {exc}"
    except validate.ArgvError as exc:  # e.g. a heartbeat whose job id is `--state=RUNNING`
        return "action", f"{action} refused: {exc}"
    return "action", f"unknown action {action}"


def would(action: Action) -> str:
    """What carrying out `action` would do, in words (`--dry-run`)."""
    job = str(action.job)
    if action.kind is ActionKind.DUMP:
        if action.pid is not None:
            return f"would attach a py-spy dump of pid {action.pid}"
        return f"would attach a py-spy dump of job {job}'s Python processes (srun --overlap)"
    if action.kind in (ActionKind.REQUEUE, ActionKind.HOLD):
        verb = action.kind.value  # requeue, hold: the scontrol command of that name
        return f"would {verb} job {job} (scontrol {verb} {job})"
    if action.kind is ActionKind.SIGNAL:
        return f"would send SIG{action.signal} to job {job} (scancel --signal={action.signal})"
    if action.kind is ActionKind.DELETE:
        return f"would delete {', '.join(action.names)} in {action.path}"
    return f"would {action}"


def delete(action: Action, timeout: float) -> str:
    """Remove the checkpoints `action.names` of the folder `action.path` in an abandonable
    child (a hung filesystem never hangs rtool), each only if it is not a symlink and all of
    it is yours (rtool/core/ckptscan.py); what it did, in one line."""
    request = json.dumps({"folder": action.path, "names": list(action.names)})
    proc = child.start("prune", request, script=child.CKPT_CHILD)
    out = child.collect(proc, time.monotonic() + timeout)
    if out.timed_out:
        return f"deleting in {action.path} timed out after {timeout:g}s (abandoned)"
    if out.error or out.data is None:
        return f"deleting in {action.path} failed: {out.error}"
    items = out.data.get("pruned") or []
    gone = [str(i.get("name")) for i in items if i.get("ok")]
    kept = [f"{i.get('name')} ({i.get('why')})" for i in items if not i.get("ok")]
    text = f"deleted {', '.join(gone) if gone else 'nothing'} in {action.path}"
    return text + (f"; refused {', '.join(kept)}" if kept else "")


def apply(
    results: list[CheckResult],
    state: StateDir,
    slurm: Slurm,
    timeout: float,
    *,
    dry_run: bool = False,
) -> list[str]:
    """Run each result's actions once per token and record outcomes in its fields. With
    `dry_run`, only say what would be done (the returned lines; the fields say it too):
    nothing runs and nothing is recorded, so the real run after it still acts."""
    planned: list[str] = []
    with state.lock("watch-actions"):
        done: Any = state.read_json(DONE_FILE, {})
        done = done if isinstance(done, dict) else {}
        for r in results:
            for action in r.actions:
                mark = f"{r.action_token}|{action}"
                if r.action_token and mark in done:
                    continue
                if dry_run:
                    planned.append(f"{r.key}: {would(action)}")
                    r.fields["action"] = "; ".join(
                        x for x in (r.fields.get("action"), f"dry run: {would(action)}") if x
                    )
                    continue
                name, outcome = run_action(action, slurm, timeout)
                log.info("%s: %s", r.key, outcome.splitlines()[0] if outcome else str(action))
                r.fields[name] = (
                    outcome if name not in r.fields else r.fields[name] + "\n" + outcome
                )
                done[mark] = time.time()
        if dry_run:
            return planned
        keep = sorted(done.items(), key=lambda kv: kv[1])[-500:]
        state.write_json(DONE_FILE, dict(keep))
    return planned
