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
from rtool.core.slurm import RUNNING_STATES, SqueueJob, expand_hostlist
from rtool.runs import inplace, signatures, steps
from rtool.runs.beats import apply_beats
from rtool.runs.finish import Claim
from rtool.runs.inplace import RestartRecord
from rtool.runs.logtail import shown
from rtool.runs.model import FROM_HEARTBEAT, Attempt, Ledger, Source
from rtool.runs.records import BatchRecord
from rtool.runs.stops import degraded_state
from rtool.runs.totals import fold

if TYPE_CHECKING:
    from rtool.core.slurm import SacctRecord

#: Attempts a ledger keeps in full by default (`[runs] keep_attempts`).
KEEP_ATTEMPTS = 100
#: How long an attempt's end record stands in for sacct (slurmdbd lags behind slurmctld).
ACCOUNTING_LAG = 300.0
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


def _end(r: SacctRecord) -> float | None:
    """When the attempt ended: sacct's End, or Start + Elapsed when that is earlier (a
    requeued record's End can be the next run's start)."""
    if not r.finished or r.end is None:
        return None
    if r.start is not None and r.elapsed_s is not None:
        return min(r.end, r.start + r.elapsed_s)
    return r.end


def from_sacct(run: str, recs: Sequence[SacctRecord]) -> list[Attempt]:
    """One attempt per record that started (pending records and never-started tasks are not
    attempts); the restart index counts earlier records of the same job id."""
    started = sorted((r for r in recs if r.start is not None), key=lambda r: r.start or 0.0)
    seen: dict[str, int] = {}
    out = []
    for r in started:
        restart = seen.get(r.job_id, 0)
        seen[r.job_id] = restart + 1
        out.append(
            Attempt(
                run=run,
                number=0,
                job_id=r.job_id,
                restart=restart,
                job_id_raw=r.job_id_raw,
                array_job_id=r.array_job_id,
                array_task_id=r.array_task_id,
                nodes=tuple(r.nodes),
                queued_at=r.submit,
                started=r.start,
                ended=_end(r),
                state=r.state,
                exit_code=r.exit_code,
                signal=r.signal,
                source=Source.SACCT,
            )
        )
    return out


def _apply_record(by_key: dict[tuple[str, int], Attempt], run: str, rec: BatchRecord) -> None:
    key = (rec.shown_id, rec.restart)
    a = by_key.get(key) or Attempt(
        run=run,
        number=0,
        job_id=rec.shown_id,
        restart=rec.restart,
        job_id_raw=rec.job_id,
        array_job_id=rec.array_job_id,
        array_task_id=rec.array_task_id,
        state="RUNNING",
        source=Source.RECORDS,
    )
    nodes = rec.nodes
    if rec.event == "start":
        a = a.with_(started=rec.time, nodes=a.nodes or nodes)
    else:
        rc = rec.rc
        state = "COMPLETED" if rc == 0 else "ENDED"
        sig = rc - 128 if rc is not None and rc > 128 else None
        a = a.with_(ended=rec.time, state=state, exit_code=rc, signal=sig, source=Source.RECORDS)
        a = a.with_(started=a.started or rec.time, nodes=a.nodes or nodes)
    by_key[key] = a


def from_records_and_queue(
    run: str,
    prev: Sequence[Attempt],
    recs: Sequence[BatchRecord],
    queue: Sequence[SqueueJob],
    now: float,
) -> list[Attempt]:
    """Degraded mode: the previous attempts, the batch records on top, running jobs from squeue
    (an attempt rtool saw running that left the queue without an end record is GONE)."""
    by_key = {a.key: a for a in prev}
    for rec in recs:
        _apply_record(by_key, run, rec)
    running = {j.job_id: j for j in queue if j.state in RUNNING_STATES}
    for job_id, j in running.items():
        mine = [a for a in by_key.values() if a.job_id == job_id]
        if any(not a.is_over for a in mine):
            continue
        restart = max((a.restart + 1 for a in mine), default=0)
        start = j.start_time.timestamp() if j.start_time else now
        if any(a.started is not None and a.started >= start - 1 for a in mine):
            continue  # that run of the job has already ended (records are ahead of squeue)
        by_key[(job_id, restart)] = Attempt(
            run=run,
            number=0,
            job_id=job_id,
            restart=restart,
            array_job_id=j.array_job_id if j.is_array else None,
            array_task_id=int(j.array_task) if j.array_task and j.array_task.isdigit() else None,
            nodes=tuple(expand_hostlist(j.nodelist)) if j.nodelist else (),
            queued_at=j.submit_time.timestamp() if j.submit_time else None,
            started=start,
            state="RUNNING",
            source=Source.SQUEUE,
        )
    out = []
    for a in by_key.values():
        if not a.is_over and a.job_id not in running and a.source is not Source.RECORDS:
            a = a.with_(state="GONE", ended=now)
        elif not a.is_over and a.job_id not in running and a.started is not None:
            # a start record without an end: it left the queue unseen (node failure, kill)
            a = a.with_(state="GONE", ended=now)
        out.append(a)
    return out


def _lagging(a: Attempt, now: float) -> bool:
    """Running, or completed (exit 0) by its own end record within `ACCOUNTING_LAG`: sacct may
    not know it yet."""
    if not a.is_over:
        return True
    recent = a.ended is not None and a.ended >= now - ACCOUNTING_LAG
    return a.source is Source.RECORDS and a.state == "COMPLETED" and recent


def _carry(new: Attempt, old: Attempt | None) -> Attempt:
    """Keep what the previous ledger knew and the new source cannot tell."""
    if old is None:
        return new
    keep = {}
    for name in (
        "step_start",
        "step_end",
        "last_saved_step",
        "stop_reason",
        "error",
        "signature",
        "log_path",
        "queued_at",
        *FROM_HEARTBEAT,
    ):
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
        for a in attempts
        if a.is_over and a.signature is None and not (a.finished and a.state == "COMPLETED")
    }
    todo = {k for k in todo if k in {a.key for a in attempts[-MAX_LOG_READS:]}}
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
            if sig is not None or a.log_path is not None:
                a = a.with_(signature=sig)
        out.append(a)
    return out


def _base(old: dict[tuple[str, int], Attempt], inp: Inputs) -> list[Attempt]:
    """The attempts the sources report: sacct's (with the older ones it no longer reports,
    and those it does not know yet), or without accounting the records' and squeue's."""
    if inp.sacct is None:
        return from_records_and_queue(inp.run, list(old.values()), inp.records, inp.queue, inp.now)
    base = from_sacct(inp.run, inp.sacct)
    known = {a.key for a in base}
    # attempts sacct no longer reports (purged, or older than the lookback) stay
    base += [a for k, a in old.items() if k not in known and a.is_over]
    # accounting lags (slurmdbd): a job squeue or the records show running, or whose recent
    # end record says it completed, is an attempt until sacct knows it
    jobs = {a.job_id for a in base}
    live = from_records_and_queue(inp.run, [], inp.records, inp.queue, inp.now)
    return base + [a for a in live if a.job_id not in jobs and _lagging(a, inp.now)]


def build(
    prev: Ledger | None,
    inp: Inputs,
    read_log: LogReader | None = None,
    extra: Sequence[signatures.Pattern] = (),
) -> Ledger:
    """The run's ledger after one sweep."""
    old = {a.key: a for a in (prev.attempts if prev else [])}
    base = _base(old, inp)
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
