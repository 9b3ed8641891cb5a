"""Issue #38 (history of a 1,000-attempt run) and issue #35 point 13: every attempt is listed
(the oldest compacted, none dropped), the totals and the losses table cover every attempt, and
the batch script's records are read well past the old 256 KiB window (and say when cut)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from rtool.core.slurm import SacctRecord, parse_sacct
from rtool.core.state import StateDir
from rtool.runs import ledger, store
from rtool.runs.attempt_records import read_records
from rtool.runs.endings import Cause
from rtool.runs.losses import breakdown
from rtool.runs.render import table
from rtool.runs.totals import totals

T0 = 1_790_000_000.0
N = 1000


def _sacct(n: int) -> list[SacctRecord]:
    """A run's attempts: each queued 10 s, ran 100 s; every 10th FAILED, the rest TIMEOUT."""

    def iso(t: float) -> str:
        return datetime.fromtimestamp(T0 + t).strftime("%Y-%m-%dT%H:%M:%S")

    lines = [
        f"{1000 + i}|{1000 + i}|{'FAILED|1:0' if i % 10 == 0 else 'TIMEOUT|0:0'}|n1"
        f"|{iso(1000 * i)}|{iso(1000 * i + 10)}|{iso(1000 * i + 110)}|100|debug|llm"
        for i in range(n)
    ]
    return parse_sacct("\n".join(lines) + "\n")


def _ledger(tmp_path: Path, sweeps: tuple[int, ...]) -> ledger.Ledger:
    state = StateDir(tmp_path / "state")
    now = T0 + 1000.0 * N + 500
    for upto in sweeps:  # sacct reports every attempt so far on each sweep
        prev = store.load(state, "llm")
        inp = ledger.Inputs(run="llm", now=now, sacct=_sacct(upto), keep=100)
        built = ledger.build(prev, inp)
        for k, a in enumerate(built.attempts):  # steps: attempt i ran 10i..10i+12
            i = int(a.job_id) - 1000
            built.attempts[k] = a.with_(step_start=10 * i, step_end=10 * i + 12, steps_lost=2)
        store.save(state, built)
    led = store.load(state, "llm")
    assert led is not None
    return led


def test_history_lists_every_attempt_of_a_1000_attempt_run(tmp_path: Path) -> None:
    led = _ledger(tmp_path, (300, 700, N, N))
    now = T0 + 1000.0 * N + 500
    assert len(led.attempts) == 100 and led.folded is not None and led.folded.attempts == 900
    text = table(led, totals(led, now), now)
    rows = [ln.split()[:2] for ln in text.splitlines() if ln[:4].strip().isdigit()]
    # every attempt once, in order, the oldest 900 compacted, the job ids as sacct shows them
    assert [int(n) for n, _ in rows] == list(range(1, N + 1))
    assert [j for _, j in rows] == [str(1000 + i) for i in range(N)]
    assert "the oldest 900 attempt(s), compacted" in text
    assert "the ledger keeps the last 100 in full); the totals cover every attempt" in text
    assert f"run llm: not finished; {N} attempt(s)" in text
    first = next(ln for ln in text.splitlines() if ln.startswith("1 "))
    assert "FAILED" in first and "exit 1" in first and " 10s " in first, first


def test_the_losses_table_covers_every_attempt_as_the_cards(tmp_path: Path) -> None:
    led = _ledger(tmp_path, (300, 700, N))
    now = T0 + 1000.0 * N + 500
    tot = totals(led, now)
    bd = breakdown(led, tot, now)
    by = {x.cause: x for x in bd.losses}
    assert tot.attempts == N
    # every attempt ended (100 crashes, 900 time limits): the table counts all 1,000
    assert sum(x.attempts for x in bd.losses) == N
    assert by[Cause.CRASH].attempts == 100 and by[Cause.TIME_LIMIT].attempts == 900
    # the wait after each attempt (900 s until the next start), the last one's excepted
    assert sum(x.waiting_s for x in bd.losses) == 900.0 * (N - 1)
    # the steps lost: as the totals (every folded attempt included)
    assert sum(x.steps_lost for x in bd.losses) == tot.steps_lost


def test_a_ledger_stored_before_compact_rows_says_what_is_only_in_the_totals(
    tmp_path: Path,
) -> None:
    led = _ledger(tmp_path, (300,))
    path = tmp_path / "state" / "runs" / "llm.json"
    raw = json.loads(path.read_text())
    del raw["folded"]["rows"], raw["folded"]["causes"]  # as rtool stored it before
    path.write_text(json.dumps(raw))
    led = store.load(StateDir(tmp_path / "state"), "llm")
    assert led is not None and led.folded is not None and led.folded.rows == ()
    now = T0 + 1000.0 * N
    text = table(led, totals(led, now), now)
    assert "200 of them from before rtool kept rows: only in the totals" in text


def test_records_are_read_past_256_kib_and_a_cut_is_said(tmp_path: Path) -> None:
    path = tmp_path / "train.attempts"
    lines = []
    for i in range(3000):  # ~600 KiB: the old window held the last ~700 attempts
        base = {"job_id": str(5000 + i), "array_job_id": "4999", "array_task_id": str(i)}
        for event, t in (("start", 10.0 * i + 1), ("end", 10.0 * i + 9)):
            rec = {**base, "event": event, "restart": 0, "node": "n1", "nodelist": "n1"}
            rec["time"] = T0 + t
            if event == "end":
                rec["rc"] = 0
            lines.append(json.dumps(rec, sort_keys=True))
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    assert path.stat().st_size > 256 * 1024
    got = read_records(str(path))
    assert len(got.records) == 6000 and got.cut == 0 and got.note() == ""
    small = read_records(str(path), limit=64 * 1024)
    assert small.cut > 0 and len(small.records) < 6000
    assert small.note().startswith(f"the first {small.cut} bytes of the records not read")


def test_the_page_says_what_is_summarised(tmp_path: Path) -> None:
    from rtool.app.timeline.run import run_page

    led = _ledger(tmp_path, (300, 700, N))
    page = run_page(led, T0 + 1000.0 * N + 500)
    assert f"{N} attempt(s)" in page
    assert "The oldest 900 attempt(s) are compacted: counted in the cards and the losses" in page
    assert "<code>rtool history llm</code>, not drawn; the last 100 are shown in full." in page
