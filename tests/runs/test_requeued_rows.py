"""A job requeued after a preemption, when slurmdbd has only its latest run (seen in CI on
22.05 under load): the batch records say it ran twice; sacct's one row is the second run, and
the first run is the records' (it ended preempted), not folded into the second."""

from __future__ import annotations

from datetime import datetime

from rtool.core.slurm import parse_sacct
from rtool.runs import slurm_facts
from rtool.runs.attempt_records import BatchRecord

T0 = 1_790_000_000.0


def _iso(t: float) -> str:
    return datetime.fromtimestamp(T0 + t).strftime("%Y-%m-%dT%H:%M:%S")


def _rec(event: str, restart: int, t: float) -> BatchRecord:
    rc = 0 if event == "end" else None
    return BatchRecord(event, "52679", None, None, restart, "n1", "n1", T0 + t, rc)


RECORDS = [_rec("start", 0, 0), _rec("end", 0, 3), _rec("start", 1, 16), _rec("end", 1, 21)]


def test_the_one_row_of_a_requeued_job_is_its_latest_run() -> None:
    row = f"52679|52679|COMPLETED|0:0|n1|{_iso(-5)}|{_iso(16)}|{_iso(21)}|5|low0|rt\n"
    got = slurm_facts.attempts("rt", parse_sacct(row), RECORDS, [], T0 + 60, {})
    assert [(a.key, a.source.value) for a in got] == [
        (("52679", 1), "sacct"),
        (("52679", 0), "records"),
    ], got
    assert got[0].started == T0 + 16 and got[1].ended == T0 + 3


def test_every_row_there_keeps_its_own_number() -> None:
    rows = (
        f"52679|52679|REQUEUED|0:15|n1|{_iso(-5)}|{_iso(0)}|{_iso(3)}|3|low0|rt\n"
        f"52679|52679|COMPLETED|0:0|n1|{_iso(-5)}|{_iso(16)}|{_iso(21)}|5|low0|rt\n"
    )
    got = slurm_facts.attempts("rt", parse_sacct(rows), RECORDS, [], T0 + 60, {})
    assert [(a.key, a.started) for a in got] == [(("52679", 0), T0), (("52679", 1), T0 + 16)]
