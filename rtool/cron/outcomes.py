"""How did the `*.slurm` jobs that earlier ticks submitted end? Asked of `sacct` first.

With accounting, one `sacct` call per tick answers for every tracked job, also long after
slurmctld forgot it (MinJobAge), with its state, exit code, signal and nodes. Without
accounting (sacct: "accounting storage is disabled") `scontrol show job` answers while slurmctld
still knows the job; once it does not, the outcome is `unknown` and says why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rtool.core.slurm import AccountingDisabled, SacctRecord, Slurm, SlurmError
from rtool.cron.runner import FINAL_STATES, slurm_outcome

log = logging.getLogger(__name__)

#: How long a job that neither sacct nor slurmctld can place is retried before it is `unknown`
#: (sacct failing for a while, or slurmdbd not having the record yet).
RETRY_SECONDS = 6 * 3600.0
NO_ACCOUNTING = (
    "Slurm accounting is disabled (sacct: accounting storage is disabled), and slurmctld no "
    "longer knows the job (it ended more than MinJobAge ago): its outcome cannot be known"
)


@dataclass(frozen=True)
class Outcome:
    job_id: str
    status: str  # ok | failed | timeout | unknown
    exit_code: int | None = None
    state: str | None = None  # Slurm's word: COMPLETED, FAILED, OUT_OF_MEMORY, NODE_FAIL...
    source: str = "sacct"  # sacct | scontrol | none
    signal: int | None = None
    nodes: tuple[str, ...] = ()
    why: str = ""  # for `unknown`: why it cannot be known

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"job_id": self.job_id, "status": self.status}
        out.update(exit_code=self.exit_code, state=self.state, source=self.source)
        if self.signal is not None:
            out["signal"] = self.signal
        if self.why:
            out["why"] = self.why
        return out

    @property
    def message(self) -> str:
        text = f"Slurm job {self.job_id} {self.state or self.status}"
        if self.exit_code:
            text += f", exit code {self.exit_code}"
        if self.signal:
            text += f", signal {self.signal}"
        if self.nodes:
            text += f" on {','.join(self.nodes)}"
        return text


def from_sacct(job_id: str, records: Sequence[SacctRecord]) -> Outcome | None:
    """Pure: the outcome of job `job_id` from its sacct records (an array's tasks, or the one
    record of a plain job); None while any of them may still run."""
    if not records or any(r.state not in FINAL_STATES for r in records):
        return None
    bad = [r for r in records if not FINAL_STATES[r.state]]
    worst = bad[0] if bad else records[-1]
    if not bad:
        status = "ok"
    elif all(r.state == "TIMEOUT" for r in bad):
        status = "timeout"
    else:
        status = "failed"
    nodes = tuple(dict.fromkeys(n for r in records for n in r.nodes))
    return Outcome(job_id, status, worst.exit_code, worst.state, "sacct", worst.signal, nodes)


def _by_job(job_ids: Sequence[str], records: Sequence[SacctRecord]) -> dict[str, list[Any]]:
    out: dict[str, list[SacctRecord]] = {j: [] for j in job_ids}
    for rec in records:
        for key in {rec.job_id, rec.job_id_raw, rec.array_job_id}:
            if key in out:
                out[key].append(rec)
                break
    return out


def resolve(
    slurm: Slurm, job_ids: Sequence[str], started: Mapping[str, float], now: float
) -> dict[str, Outcome]:
    """Outcomes of the jobs that ended; jobs still queued or running are left out."""
    if not job_ids:
        return {}
    why = ""
    by_job: dict[str, list[SacctRecord]] = {}
    try:
        by_job = _by_job(job_ids, slurm.sacct(job_ids=job_ids, all_attempts=False))
    except AccountingDisabled:
        why = NO_ACCOUNTING
    except SlurmError as exc:
        log.warning("sacct failed (%s); asking scontrol", exc)
        why = f"sacct failed ({exc}) and slurmctld no longer knows the job"
    out: dict[str, Outcome] = {}
    for job_id in job_ids:
        if by_job.get(job_id):
            found = from_sacct(job_id, by_job[job_id])
            if found is not None:
                out[job_id] = found
            continue  # sacct knows it: still running
        try:
            records = slurm.show_job(job_id)
        except SlurmError as exc:
            log.warning("cannot check job %s: %s", job_id, exc)
            continue
        if records:
            done = slurm_outcome(records[0])
            if done is not None:
                state = records[0].get("JobState", "").split(" ")[0] or None
                out[job_id] = Outcome(job_id, done[0], done[1], state, "scontrol")
            continue
        if why == NO_ACCOUNTING or now - started.get(job_id, now) > RETRY_SECONDS:
            out[job_id] = Outcome(
                job_id, "unknown", source="none", why=why or "no record in sacct or slurmctld"
            )
    return out
