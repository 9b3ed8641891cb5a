"""A run's attempts as Slurm and the batch script saw them (pure): one per sacct record that
started, or, without accounting (degraded mode), the batch script's start and end records and
the jobs squeue shows running. What heartbeats, logs and the previous ledger add is
rtool.runs.ledger's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rtool.core.slurm import RUNNING_STATES, SqueueJob, expand_hostlist
from rtool.runs.attempt_records import BatchRecord
from rtool.runs.model import Attempt, Source

if TYPE_CHECKING:
    from rtool.core.slurm import SacctRecord

#: How long an attempt's end record stands in for sacct (slurmdbd lags behind slurmctld).
ACCOUNTING_LAG = 300.0


def attempts(
    run: str,
    sacct: Sequence[SacctRecord] | None,
    records: Sequence[BatchRecord],
    queue: Sequence[SqueueJob],
    now: float,
    old: Mapping[tuple[str, int], Attempt],
) -> list[Attempt]:
    """The run's attempts by the Slurm facts of one sweep: sacct's (`sacct` None: without
    accounting, the batch records and squeue on top of the `old` ledger's attempts)."""
    if sacct is None:
        return from_records_and_queue(run, list(old.values()), records, queue, now)
    base = _after_records(from_sacct(run, sacct), records)
    known = {a.key for a in base}
    # attempts sacct no longer reports (purged, or older than the lookback) stay
    base += [a for k, a in old.items() if k not in known and a.is_over]
    # accounting lags (slurmdbd): a job squeue or the records show running, or whose recent
    # end record says it completed, is an attempt until sacct knows it
    jobs = {a.job_id for a in base}
    live = from_records_and_queue(run, [], records, queue, now)
    missed = [a for a in live if a.job_id in jobs and a.key not in known and a.is_over]
    return base + missed + [a for a in live if a.job_id not in jobs and _lagging(a, now)]


def _after_records(base: list[Attempt], records: Sequence[BatchRecord]) -> list[Attempt]:
    """sacct's rows of a requeued job numbered as the batch records number its runs: when
    slurmdbd has fewer rows than the records have starts (under load it had only the latest
    run of a job requeued after a preemption), the rows are the latest runs, not the first."""
    runs: dict[str, int] = {}
    for rec in records:
        if rec.event == "start":
            runs[rec.shown_id] = max(runs.get(rec.shown_id, 0), rec.restart + 1)
    rows = Counter(a.job_id for a in base)
    out = []
    for a in base:
        shift = runs.get(a.job_id, 0) - rows[a.job_id]
        out.append(a.with_(restart=a.restart + shift) if shift > 0 else a)
    return out


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
        # (a start record without an end: it left the queue unseen, a node failure, a kill)
        seen = a.source is not Source.RECORDS or a.started is not None
        if not a.is_over and a.job_id not in running and seen:
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
