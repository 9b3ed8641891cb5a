"""Build a run's attempt ledger (pure): Slurm facts from sacct, or without accounting from the
batch script's records and squeue observations; steps and stop reasons from heartbeats; a
failure signature from each ended attempt's log tail. The previous ledger (state dir) carries
what a source cannot tell again (steps seen by an earlier sweep, signatures, log tails).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rtool import __version__
from rtool.core.heartbeat import Heartbeat
from rtool.core.slurm import SqueueJob
from rtool.runs import ckptcause, inplace, signatures, slurm_facts, steps
from rtool.runs.attempt_records import BatchRecord
from rtool.runs.beats import apply_beats, degraded_state
from rtool.runs.finish import Claim
from rtool.runs.inplace import RestartRecord
from rtool.runs.logtail import shown
from rtool.runs.model import FROM_HEARTBEAT, Attempt, Ledger
from rtool.runs.totals import fold

if TYPE_CHECKING:
    from rtool.core.slurm import SacctRecord

#: Attempts a ledger keeps in full by default (`[runs] keep_attempts`).
KEEP_ATTEMPTS = 100
#: Attempts whose log is read for a signature per build (the newest first).
MAX_LOG_READS = 4
DEGRADED_NOTE = (
    "no accounting: attempts from the batch script's records, heartbeats and squeue "
    "observations (states of attempts rtool did not see end are unknown)"
)

#: read_log(attempt) -> (log path, tail lines), or None when there is no readable log.
LogReader = Callable[[Attempt], "tuple[str, tuple[str, ...]] | None"]


@dataclass
class Inputs:
    """What one sweep observed about a run."""

    run: str
    now: float
    sacct: list[SacctRecord] | None  # None: no accounting (degraded mode)
    records: list[BatchRecord] = field(default_factory=list)
    heartbeat: Heartbeat | None = None
    queue: list[SqueueJob] = field(default_factory=list)  # the run's jobs in squeue now
    #: The training's claim to have finished (its done marker, or a heartbeat in state
    #: finished): the run is finished only when Slurm says that attempt COMPLETED.
    claim: Claim | None = None
    total_steps: int | None = None
    note: str = ""
    #: Attempts kept in full; older ones are folded into the ledger's running totals.
    keep: int = KEEP_ATTEMPTS
    #: The restart records: the training restarted inside an allocation (rtool.runs.inplace).
    restarts: list[RestartRecord] = field(default_factory=list)


#: Attempt fields a new source may not know again: the previous ledger's value is kept.
_CARRIED = (
    *("step_start", "step_end", "last_saved_step", "stop_reason", "error", "signature"),
    *("log_path", "queued_at", *FROM_HEARTBEAT),
)


def _carry(new: Attempt, old: Attempt | None) -> Attempt:
    """Keep what the previous ledger knew and the new source cannot tell."""
    if old is None:
        return new
    keep = {}
    for name in _CARRIED:
        if getattr(new, name) in (None, ()) and getattr(old, name) not in (None, ()):
            keep[name] = getattr(old, name)
    if not new.log_tail and old.log_tail:
        keep["log_tail"] = old.log_tail
    if old.finished:
        keep["finished"] = True
    return new.with_(**keep) if keep else new


def confirmed_finish(a: Attempt) -> bool:
    """The training said it finished in this attempt and Slurm says it ended COMPLETED (exit 0
    in the batch script's end record without accounting): never the marker alone."""
    return a.finished and a.state == "COMPLETED" and a.exit_code in (0, None)


def _order(attempts: list[Attempt], before: int = 0) -> list[Attempt]:
    """In start order, numbered after the `before` attempts already folded."""

    def when(a: Attempt) -> float:
        return a.started if a.started is not None else (a.queued_at or math.inf)

    ordered = sorted(attempts, key=lambda a: (when(a), a.job_id, a.restart))
    return [a.with_(number=i) for i, a in enumerate(ordered, before + 1)]


def steps_lost(attempts: list[Attempt]) -> list[Attempt]:
    """Each attempt's steps lost (rtool.runs.steps.lost: the one definition)."""
    out = []
    for i, a in enumerate(attempts):
        nxt = next((b.step_start for b in attempts[i + 1 :] if b.step_start is not None), None)
        out.append(a.with_(steps_lost=steps.lost(a, nxt)))
    return out


def _signatures(
    attempts: list[Attempt], read_log: LogReader | None, extra: Sequence[signatures.Pattern]
) -> list[Attempt]:
    """Sign the ended attempts that have no signature yet (the newest MAX_LOG_READS), and
    refresh the last attempt's log tail."""
    todo = {
        a.key
        for a in attempts[-MAX_LOG_READS:]
        if a.is_over and a.signature is None and not (a.finished and a.state == "COMPLETED")
    }
    out = []
    for i, a in enumerate(attempts):
        last = i == len(attempts) - 1
        lines = a.log_tail
        if read_log is not None and (a.key in todo or last):
            got = read_log(a)
            if got is not None:  # the long tail for the root cause, the short one kept
                lines = got[1]
                a = a.with_(log_path=got[0], log_tail=shown(got[1]))
        if a.key in todo:
            sig = signatures.match(lines, a.state, a.error, extra, a.nodes)
            sig = ckptcause.complete(sig, a.checkpoint_folder, a.resumed_from)
            if sig is not None or a.log_path is not None:
                a = a.with_(signature=sig)
        out.append(a)
    return out


def build(
    prev: Ledger | None,
    inp: Inputs,
    read_log: LogReader | None = None,
    extra: Sequence[signatures.Pattern] = (),
) -> Ledger:
    """The run's ledger after one sweep."""
    old = {a.key: a for a in (prev.attempts if prev else [])}
    base = slurm_facts.attempts(inp.run, inp.sacct, inp.records, inp.queue, inp.now, old)
    folded = prev.folded if prev else None
    attempts = {
        a.key: _carry(a, old.get(a.key)) for a in base if folded is None or not folded.covers(a)
    }
    apply_beats(attempts, inp.records, inp.heartbeat, inp.claim, inp.restarts)
    attempts = {k: degraded_state(a) for k, a in attempts.items()}
    hb = inp.heartbeat
    ordered = steps_lost(_order(list(attempts.values()), folded.attempts if folded else 0))
    ordered = _signatures(ordered, read_log, extra)
    ordered, folded = fold(ordered, folded, inp.keep, inp.now)
    ledger = Ledger(
        run=inp.run,
        attempts=ordered,
        accounting=inp.sacct is not None,
        note=inp.note or ("" if inp.sacct is not None else DEGRADED_NOTE),
        finished=any(confirmed_finish(a) for a in ordered),
        total_steps=inp.total_steps
        if inp.total_steps is not None
        else (prev.total_steps if prev else None),
        step_seconds=(hb.step_seconds if hb and hb.step_seconds else None)
        or (prev.step_seconds if prev else None),
        updated=inp.now,
        crash_loop_at=prev.crash_loop_at if prev else None,
        rtool_version=__version__,
        shim_version=(hb.rtool_version if hb else None) or (prev.shim_version if prev else None),
        folded=folded,
    )
    copies = [r.heartbeat for r in inp.records] + [r.heartbeat for r in inp.restarts]
    found = inplace.entries(inp.run, inp.restarts, [b for b in (hb, *copies) if b is not None])
    ledger.restarts = inplace.merge(prev.restarts if prev else [], found)
    steps.best_step(ledger, prev, hb, inp.now)
    return ledger
