"""Issue 25 findings 4 and 11: every field from outside is cut to a stated size before it is
stored or sent; state files stay under their cap by design (the oldest entries dropped or summed
up), so nothing rtool wrote is ever moved aside as corrupt; a 20 MB pre-flight output costs
little time. Real files, real subprocesses, the real log channel."""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from rtool.core.alert import MAX_SUMMARY, Alert, Status
from rtool.core.safeio import DEFAULT_LIMIT
from rtool.core.slurm import SacctRecord, parse_sacct
from rtool.core.state import StateDir
from rtool.nodes.preflight import command
from rtool.nodes.preflight.base import MAX_DETAIL, NodeReport, Outcome
from rtool.nodes.preflight.registry import NodeContext
from rtool.nodes.preflight_job import JobInfo, JobOutcome, alerts, record
from rtool.nodes.store import SuspectStore
from rtool.notify.config import NotifyConfig
from rtool.notify.engine import process
from rtool.notify.silence_store import Silences, parse_matcher
from rtool.runs import ledger, store
from rtool.runs.model import Ledger
from rtool.runs.totals import totals

BIG = 20 * 1024 * 1024
PRINT_20MB = f"{sys.executable} -c \"import sys; sys.stdout.write('x' * {BIG}); sys.exit(1)\""


def _corrupt(state: StateDir) -> list[Path]:
    return sorted(state.path.rglob("*.corrupt-*"))


def _sizes(state: StateDir) -> dict[str, int]:
    return {str(p.relative_to(state.path)): p.stat().st_size for p in state.path.rglob("*.json")}


def test_a_preflight_printing_20mb_keeps_state_whole_and_time_bounded(tmp_path: Path) -> None:
    """The command check, the suspect evidence and the alert (held by a silence, then sent to
    the log channel) of a node whose check printed 20 MB on one line."""
    start = time.monotonic()
    outcome = command.run(NodeContext(command=PRINT_20MB, timeout=60))
    assert not outcome.ok and len(outcome.detail) <= MAX_DETAIL and len(outcome.output) <= 2000
    state = StateDir(tmp_path / "state")
    suspects = SuspectStore(state)
    info = JobInfo(job_id="88_1", name="llm", nodes=["n1", "n2"], partition=None, restarts=0)
    # what a node could print even so: the job-level side bounds it again
    huge = Outcome("command", False, "y" * BIG, "z" * BIG)
    cfg = NotifyConfig.model_validate({"log": {"path": str(tmp_path / "alerts.log")}})
    Silences(state).add([parse_matcher("preflight:*")], 3600, "maintenance", time.time() - 10)
    for i in range(3):  # three attempts, each as loud
        bad = [NodeReport(f"n{i + 1}", [outcome, huge])]
        record(suspects, info, bad, time.time())
        out = JobOutcome(reports=bad, bad=bad, action="not requeued")
        process(alerts(info, out, time.time()), cfg, state)
    process(
        [Alert("preflight:llm@n9", Status.CRITICAL, "q" * BIG, {"output": "o" * BIG})], cfg, state
    )
    took = time.monotonic() - start
    assert took < 30, took
    assert not _corrupt(state) and all(size < DEFAULT_LIMIT for size in _sizes(state).values())
    assert [s.node for s in suspects.suspects()] == ["n3", "n2", "n1"]  # nothing lost
    assert max(len(e.detail) for s in suspects.suspects() for e in s.evidence) <= 500
    held = Silences(state).load()[0].held
    assert len(held) == 4 and all(len(h["notification"]["summary"]) <= MAX_SUMMARY for h in held)


def test_state_writes_never_exceed_the_cap(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    state.write_json("x.json", {"ok": 1})
    assert not state.write_json("x.json", {"big": "b" * DEFAULT_LIMIT})
    assert state.read_json("x.json") == {"ok": 1} and state.problems  # kept as it was

    def halve(d: dict[str, list[int]]) -> dict[str, list[int]]:
        return {"items": d["items"][len(d["items"]) // 2 :]}

    assert state.write_json("y.json", {"items": list(range(10**6))}, shrink=halve)
    kept = state.read_json("y.json")["items"]
    assert kept[-1] == 10**6 - 1 and (tmp_path / "state" / "y.json").stat().st_size < DEFAULT_LIMIT


def _sacct(n: int) -> list[SacctRecord]:
    """Accounting of a run's first `n` attempts: each queued 10 s, ran 100 s, FAILED."""

    def iso(t: float) -> str:
        return datetime.fromtimestamp(T0 + t).strftime("%Y-%m-%dT%H:%M:%S")

    lines = [
        f"{1000 + i}|{1000 + i}|FAILED|1:0|n1|{iso(1000 * i)}|{iso(1000 * i + 10)}"
        f"|{iso(1000 * i + 110)}|100|debug|llm"
        for i in range(n)
    ]
    return parse_sacct("\n".join(lines) + "\n")


def _beat(led: Ledger) -> Ledger:
    """Steps as the heartbeats said: attempt i ran steps 10i..10i+12 (2 done again after it)."""
    for k, a in enumerate(led.attempts):
        i = int(a.job_id) - 1000
        led.attempts[k] = a.with_(step_start=10 * i, step_end=10 * i + 12, log_tail=TAIL)
    return led


T0 = 1_790_000_000.0
TAIL = tuple("é" * 200 for _ in range(12))


def test_the_ledger_keeps_the_last_attempts_in_full_plus_totals(tmp_path: Path) -> None:
    """A run of 250 attempts: 100 kept, the rest summed up; sacct reporting the old ones again
    adds nothing; the totals are those of all 250; the file is never moved aside."""
    state = StateDir(tmp_path / "state")
    now = T0 + 300_000.0
    for upto in (50, 120, 250, 250):  # sweeps: sacct reports every attempt so far each time
        prev = store.load(state, "llm")
        inp = ledger.Inputs(run="llm", now=now, sacct=_sacct(upto), keep=100)
        store.save(state, ledger.build(_beat(prev) if prev else None, inp))
    led = store.load(state, "llm")
    assert led is not None and len(led.attempts) == 100 and led.attempts[0].number == 151
    assert led.attempts[-1].job_id == "1249" and led.folded is not None
    tot = totals(led, now)
    assert tot.attempts == 250 and tot.computing_s == 250 * 100.0 and tot.queued_s == 250 * 10.0
    assert not _corrupt(state)
    # an absurd ledger (4000 nodes an attempt, names no host list range can shorten) still
    # fits: fewer attempts kept, none lost
    names = tuple(f"{chr(97 + n % 26)}node{n:05d}" for n in range(4000))
    wide = [a.with_(nodes=names) for a in led.attempts]
    store.save(state, Ledger(run="wide", attempts=wide, folded=led.folded))
    back = store.load(state, "wide")
    assert back is not None and back.folded is not None and not _corrupt(state)
    assert totals(back, now).attempts == 250 and len(back.attempts) < 100
    assert os.path.getsize(state.path / "runs" / "wide.json") < DEFAULT_LIMIT


@pytest.mark.parametrize("field", ["summary", "fields"])
def test_alert_state_and_outbox_stay_small(tmp_path: Path, field: str) -> None:
    state = StateDir(tmp_path / "state")
    cfg = NotifyConfig.model_validate({"log": {"path": str(tmp_path / "alerts.log")}})
    text = "w" * BIG
    a = Alert("log:/x", Status.CRITICAL, text if field == "summary" else "hung", {})
    if field == "fields":
        a.fields = {f"f{i}": text for i in range(100)}
    start = time.monotonic()
    first = process([a], cfg, state)
    again = process([a], cfg, state)  # the same incident: no second alert
    assert time.monotonic() - start < 30
    assert first.ok and [d.kind for d in again.decisions] == [None]
    assert not _corrupt(state) and all(size < 100_000 for size in _sizes(state).values())
    assert (tmp_path / "alerts.log").stat().st_size < 100_000
