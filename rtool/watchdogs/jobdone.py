"""Did a watched job's run finish? (the job watchdog asks before calling its jobs missing)

A run that calls `guard.finished()` leaves its array's last task COMPLETED and the tasks it
cancelled CANCELLED, and then nothing is running or queued. The job watchdog reads that as
finished when the run's ledger says so (`rtool watch run`, `rtool history`), or when the
heartbeat's done marker (or a heartbeat in state finished) is confirmed by Slurm for the attempt
that wrote it (COMPLETED, exit 0: `rtool.runs.finish`, never the marker alone) and belongs to the
newest of the jobs squeue still shows under that name (they ended COMPLETED, or CANCELLED by the
finishing task), or to the run when squeue shows none of them any more. The run and its
heartbeat come from the `[[watch.job]]` entry, else from what `rtool submit` recorded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from rtool.core.heartbeat import Heartbeat, HeartbeatFormatError, RunState, read_heartbeat
from rtool.core.slurm import Slurm, SqueueJob
from rtool.core.state import StateDir
from rtool.runs import finish, names, store
from rtool.runs.model import Ledger
from rtool.watchdogs.config import JobWatch

#: How a finishing run's jobs end: the task that finished, the tasks it cancelled.
FINISHED_STATES = {"COMPLETED", "CANCELLED"}
#: Done markers Slurm confirmed (heartbeat path, attempt), kept in the state dir (the newest).
CONFIRMED = "jobdone/confirmed.json"
MAX_CONFIRMED = 200


@dataclass(frozen=True)
class RunView:
    """What the job watchdog knows of the run behind a watched job name."""

    run: str
    ledger: Ledger | None = None
    #: The heartbeat as the training finished (done marker, or a finished heartbeat).
    done: Heartbeat | None = None
    #: Slurm says the attempt that claimed to finish ended COMPLETED, exit 0.
    confirmed: bool = False


def observe(
    state: StateDir, specs: list[JobWatch], confirm: Callable[[str], bool]
) -> dict[str, RunView]:
    """The run behind each job watch (by its name): its stored ledger and its done marker, and
    whether Slurm confirms that marker (`confirm(heartbeat path)`, asked only when there is one:
    `slurm_confirms`). The submissions are read once, and only when an entry does not name its
    run and heartbeat."""
    subs: list[names.Submission] | None = None
    views = {}
    for spec in specs:
        sub = None
        if not spec.regex and not (spec.run and spec.heartbeat):
            subs = names.submissions(state) if subs is None else subs
            sub = names.find(state, spec.name, subs)
        run = spec.run or (sub.run if sub is not None else spec.name)
        heartbeat = spec.heartbeat or (sub.heartbeat if sub is not None else None)
        ledger = None if spec.regex else store.load(state, run)
        done = finished_heartbeat(heartbeat, run)
        sure = done is not None and heartbeat is not None and confirm(heartbeat)
        views[spec.name] = RunView(run, ledger, done, sure)
    return views


def slurm_confirms(slurm: Slurm, state: StateDir | None = None) -> Callable[[str], bool]:
    """Slurm's word on a heartbeat's done marker: the attempt it names ended COMPLETED, exit 0.
    A confirmation is kept in `state` (such an attempt stays so), so a finished run that is
    still watched costs one sacct, not one more on every sweep."""

    def confirm(heartbeat: str) -> bool:
        c = finish.claim(heartbeat)
        if c is None or c.key is None:
            return False
        key = f"{os.path.realpath(os.path.expanduser(heartbeat))}|{c.key[0]}|{c.key[1]}"
        kept = _confirmed(state)
        if key in kept:
            return True
        ok = finish.confirmed(slurm, c)
        if ok and state is not None:
            state.write_json(CONFIRMED, [*kept, key][-MAX_CONFIRMED:])
        return ok

    return confirm


def _confirmed(state: StateDir | None) -> list[str]:
    raw = state.read_json(CONFIRMED, default=[]) if state is not None else []
    return [k for k in raw if isinstance(k, str)]


def finished_heartbeat(path: str | None, run: str) -> Heartbeat | None:
    """The done marker `<heartbeat>.done`, else the heartbeat if it says finished; None when
    neither does, or when it belongs to another run."""
    if not path:
        return None
    full = os.path.expanduser(path)
    for candidate in (f"{full}.done", full):
        try:
            hb = read_heartbeat(candidate)
        except HeartbeatFormatError:
            hb = None
        if candidate.endswith(".done") and hb is None and os.path.exists(candidate):
            return Heartbeat(state=RunState.FINISHED, time=os.path.getmtime(candidate), run=run)
        if hb is not None and hb.state is RunState.FINISHED and hb.run in (None, run):
            return hb
    return None


def finished_step(view: RunView | None, gone: list[SqueueJob]) -> tuple[bool, int | None]:
    """(finished, its step): the ledger says so, or the done marker agrees with how Slurm says
    the name's newest jobs ended (`gone`: squeue's records of them that are no longer active)."""
    if view is None:
        return False, None
    led = view.ledger
    if led is not None and led.finished:
        return True, led.best_step
    hb = view.done
    if hb is None or not view.confirmed:
        return False, None
    step = hb.step if hb.step is not None else hb.stop_step
    if not gone:
        return True, step  # squeue forgot the jobs: the marker is what is left
    newest = max(gone, key=lambda j: int(j.array_job_id) if j.array_job_id.isdigit() else -1)
    ids = {hb.array_job_id, hb.job_id} - {None}
    same = not ids or newest.array_job_id in ids or newest.job_id in ids
    mine = [j for j in gone if j.array_job_id == newest.array_job_id]
    return same and all(j.state in FINISHED_STATES for j in mine), step
