# ruff: noqa: E501  (captured squeue lines and expected texts are kept whole)
"""The slow node of a run (pure): the step time against the run's own median, the rank or node
consistently the slowest, the suspect from two attempts on different peers, and the warning
`rtool watch run` gives."""

from __future__ import annotations

import json
import random
import re
import statistics
import time
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from rtool.core.alert import Status
from rtool.core.heartbeat import StepSample
from rtool.core.slurm import parse_squeue
from rtool.core.state import StateDir, default_state_dir
from rtool.runs.config import RunWatch
from rtool.runs.model import Attempt, Ledger
from rtool.runs.straggler import Limits, judge, suspicions, warning
from rtool.watchdogs.base import ProbeEnv
from rtool.watchdogs.run import RunObservation, check_one, suspect_slow
from tests.conftest import CliResult

NODES = {0: "n1", 1: "n1", 2: "n2", 3: "n2"}
RUNNING = parse_squeue(
    "50_1|50|1|RUNNING|None|me|debug|2|1:00|10:00|2026-11-23T14:00:00|2026-11-23T14:00:00|n[1-2]|llm\n"
)


def _checks(
    rng: random.Random, n: int, base: float, noise: float, slow: dict[int, float] | None = None
) -> list[StepSample]:
    """`n` agreements of 4 ranks on n1/n2: each rank's step time `base` ± `noise` (uniform),
    times 1 + slow[rank]; the sample the shim keeps (the slowest rank, its lag)."""
    out = []
    for _ in range(n):
        times = [base * (1 + rng.uniform(-noise, noise)) for _ in range(4)]
        times = [t * (1 + (slow or {}).get(r, 0.0)) for r, t in enumerate(times)]
        r = max(range(4), key=lambda i: times[i])
        lag = times[r] / statistics.median(times) - 1
        out.append(StepSample(times[r], r, NODES[r], lag))
    return out


def _attempt(n: int, recent: list[StepSample], base: list[float], nodes=("n1", "n2")) -> Attempt:  # type: ignore[no-untyped-def]
    return Attempt(
        run="llm",
        number=n,
        job_id=f"50_{n}",
        nodes=tuple(nodes),
        state="RUNNING",
        started=0.0,
        step_recent=tuple(recent),
        step_baseline=tuple(base),
    )


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32),
    base=st.floats(0.01, 30.0),
    noise=st.floats(0.0, 0.10),
    n=st.integers(10, 30),
)
def test_a_steady_run_with_noise_of_10_percent_gets_no_warning(
    seed: int, base: float, noise: float, n: int
) -> None:
    rng = random.Random(seed)
    baseline = [s.seconds for s in _checks(rng, 64, base, noise)]
    a = _attempt(1, _checks(rng, n, base, noise), baseline)
    pace = judge(a, Limits())
    assert warning(pace) is None, pace
    assert suspicions([a, _attempt(2, a.step_recent, baseline, ("n2", "n3"))], Limits()) == []


def test_one_rank_20_percent_slower_is_named_with_its_node_and_lag() -> None:
    rng = random.Random(1)
    baseline = [s.seconds for s in _checks(rng, 64, 1.0, 0.05)]
    a = _attempt(2, _checks(rng, 30, 1.0, 0.05, slow={3: 0.2}), baseline)
    text = warning(judge(a, Limits()))
    pattern = r"n2 \(rank 3\) slowest in 30 of 30 checks, \+(1[5-9]|2[0-5]) %; step time 1\.\d\dx the run's median"
    assert text is not None and re.fullmatch(pattern, text), text


def test_a_regression_against_the_runs_median_names_the_slow_node() -> None:
    rng = random.Random(2)
    baseline = [s.seconds for s in _checks(rng, 64, 1.0, 0.02)]
    a = _attempt(3, _checks(rng, 20, 1.0, 0.02, slow={2: 0.2, 3: 0.2}), baseline)
    text = warning(judge(a, Limits()))
    # the node's two ranks take turns: counted by node, named with the rank seen most often
    pattern = r"step time 1\.[12]\dx the run's median; n2 \(rank [23]\) slowest in 20 of 20 checks, \+\d+ %"
    assert text is not None and re.fullmatch(pattern, text), text
    # on one node, counting by node would name it every time: only a rank counts there
    one = _attempt(3, a.step_recent, baseline, nodes=("n2",))
    assert warning(judge(one, Limits())) == (
        f"step time {judge(one, Limits()).ratio:.2f}x the run's median; "
        "no node consistently the slowest"
    )
    # too few checks or too short a baseline: nothing judged
    assert warning(judge(_attempt(3, a.step_recent[:9], baseline), Limits())) is None
    # 10 of 10 checks: a node of two could be that by chance (1 in 1024): not named yet
    assert judge(_attempt(3, a.step_recent[:10], baseline), Limits()).slow is None
    assert judge(_attempt(3, a.step_recent, baseline[:9]), Limits()).ratio is None
    assert warning(judge(a, Limits(ratio=None, lag=0.5))) is None


def test_a_suspect_only_when_slow_in_two_attempts_on_different_peers() -> None:
    rng = random.Random(3)
    slow = _checks(rng, 30, 1.0, 0.05, slow={2: 0.2})
    base = [1.0] * 20
    same = [_attempt(1, slow, base, ("n1", "n2")), _attempt(2, slow, base, ("n1", "n2"))]
    assert suspicions(same, Limits()) == []  # the same peers: maybe theirs (a shared switch)
    moved = [*same, _attempt(3, slow, base, ("n2", "n3"))]
    (found,) = suspicions(moved, Limits())
    assert found.node == "n2"
    assert found.detail == "slow in attempts 2 and 3 (peers n1; n3)"
    assert found.output.splitlines()[1].startswith("attempt 3 (job 50_3): n2 (rank 2) slowest")
    alone = [_attempt(1, slow, base, ("n2",)), _attempt(2, slow, base, ("n2",))]
    assert suspicions(alone, Limits()) == []  # one node, no peers: nothing to compare


def test_watch_run_warns_on_the_running_attempt_only() -> None:
    rng = random.Random(4)
    baseline = [s.seconds for s in _checks(rng, 64, 1.0, 0.02)]
    recent = _checks(rng, 30, 1.0, 0.02, slow={3: 0.2})
    led = Ledger(run="llm", attempts=[_attempt(1, recent, baseline)], best_step=10)
    res = check_one(RunObservation(RunWatch(name="llm"), led, RUNNING), 1000.0)
    assert res.status is Status.WARNING, res.summary
    pattern = r"llm slow: step time 1\.\d\dx the run's median; n2 \(rank 3\) slowest in 30 of 30 checks, \+\d+ % \(attempt 1\)"
    assert re.fullmatch(pattern, res.summary), res.summary
    off = RunWatch(name="llm", slow_ratio=100.0, slow_lag=0.5)
    assert check_one(RunObservation(off, led, RUNNING), 1000.0).status is Status.OK
    led.attempts = [led.attempts[0].with_(state="COMPLETED", ended=10.0)]
    assert (
        "slow" not in check_one(RunObservation(RunWatch(name="llm"), led, RUNNING), 1000.0).summary
    )


def test_rtool_nodes_says_why_the_slow_node_is_suspect(cli: Callable[..., CliResult]) -> None:
    rng = random.Random(5)
    slow = _checks(rng, 30, 1.0, 0.05, slow={2: 0.2})
    base = [1.0] * 20
    attempts = [_attempt(1, slow, base, ("n1", "n2")), _attempt(2, slow, base, ("n2", "n3"))]
    env = ProbeEnv(None, StateDir(default_state_dir()))
    old = [a.with_(started=time.time() - 2 * 86400) for a in attempts]
    suspect_slow(env, RunWatch(name="llm"), Ledger(run="llm", attempts=old))
    assert cli("nodes", "--no-refresh").out == "no suspect nodes\n"  # older than the expiry
    attempts = [a.with_(started=time.time() - 600) for a in attempts]
    led = Ledger(run="llm", attempts=attempts)
    suspect_slow(env, RunWatch(name="llm"), led)
    suspect_slow(env, RunWatch(name="llm"), led)  # the next tick: the same evidence, once
    out = cli("nodes", "--no-refresh").out
    assert out.startswith("n2  suspect since "), out
    assert out.count("slow job 50_2: slow in attempts 1 and 2 (peers n1; n3)\n") == 1, out
    assert "      | attempt 2 (job 50_2): n2 (rank 2) slowest in 30 of 30 checks, +" in out
    assert "n1" not in out.split("peers")[0] and "n3  suspect" not in out


def test_the_stored_ledger_keeps_each_attempts_window_not_the_baseline() -> None:
    rng = random.Random(6)
    a = _attempt(1, _checks(rng, 30, 1.0, 0.05, slow={2: 0.2}), [1.0] * 64)
    stored = Attempt.from_json(json.loads(json.dumps(a.to_json(compact=True))))
    assert stored.step_recent == a.step_recent and stored.step_baseline == ()
    shown = Attempt.from_json(json.loads(json.dumps(a.to_json())))  # rtool history --json
    assert shown.step_baseline == a.step_baseline
    assert Attempt.from_json({**a.to_json(), "step_recent": [{"no": 1}]}).step_recent == ()
