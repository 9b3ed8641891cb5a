"""Side effects a result asks for: py-spy stack dumps, requeue, signal, hold. Runner-only.

Each (action, token) pair runs once: a hang that persists across sweeps is acted on once.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sysconfig
import time
from pathlib import Path
from typing import Any

from rtool.core.proc import ProcError, ProcNotFound, run
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from watchdogs.base import CheckResult

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


def dump_argv(target: str, slurm: Slurm) -> list[str]:
    """`py-spy dump` of a local pid (`pid:N`), or `srun` into a job (`job:N`, `job:A_T`)
    dumping the python processes of that job."""
    kind, _, ident = target.partition(":")
    if kind == "pid":
        return [py_spy(), "dump", "--pid", ident]
    try:
        records = slurm.show_job(ident)
    except ProcError:
        records = []
    record = records[0] if records else {}
    jobid = record.get("JobId") or ident
    script = _JOB_DUMP.format(shlex.quote(py_spy()))
    srun = ["srun", f"--jobid={jobid}", "--overlap", "--ntasks-per-node=1"]
    return [*srun, "sh", "-c", script, "rtool-dump", record.get("JobName", "")]


def dump_stacks(target: str, slurm: Slurm, timeout: float) -> str:
    """The stacks of `target` (see `dump_argv`), or why there are none."""
    try:
        argv = dump_argv(target, slurm)
        res = run(argv, timeout=timeout, check=False)
    except ProcNotFound:
        return f"{Path(argv[0]).name} is not installed"
    except ProcError as exc:
        return str(exc)
    text = (res.stdout + res.stderr).strip() or f"no output (exit code {res.returncode})"
    return text[-MAX_STACKS:]


def run_action(action: str, slurm: Slurm, timeout: float) -> tuple[str, str]:
    """Carry out one action; returns (field name, outcome text)."""
    kind, _, rest = action.partition(":")
    try:
        if kind == "dump":
            return "stacks", dump_stacks(rest, slurm, timeout)
        if kind == "requeue":
            slurm.requeue(rest)
            return "action", f"requeued job {rest}"
        if kind == "hold":
            slurm.hold(rest)
            return "action", f"held job {rest} (release with: scontrol release {rest})"
        if kind == "signal":
            sig, _, job = rest.partition(":")
            slurm.scancel([job], signal=sig, full=True)
            return "action", f"sent SIG{sig} to job {job}"
    except ProcError as exc:
        return "action", f"{action} failed: {exc}"
    return "action", f"unknown action {action!r}"


def apply(results: list[CheckResult], state: StateDir, slurm: Slurm, timeout: float) -> None:
    """Run each result's actions once per token and record outcomes in its fields."""
    with state.lock("watch-actions"):
        done: Any = state.read_json(DONE_FILE, {})
        done = done if isinstance(done, dict) else {}
        for r in results:
            for action in r.actions:
                mark = f"{r.action_token}|{action}"
                if r.action_token and mark in done:
                    continue
                name, outcome = run_action(action, slurm, timeout)
                log.info("%s: %s", r.key, outcome.splitlines()[0] if outcome else action)
                r.fields[name] = (
                    outcome if name not in r.fields else r.fields[name] + "\n" + outcome
                )
                done[mark] = time.time()
        keep = sorted(done.items(), key=lambda kv: kv[1])[-500:]
        state.write_json(DONE_FILE, dict(keep))
