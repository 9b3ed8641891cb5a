"""The step log rank 0's heartbeat carries (pure): the warm-up left out, the recent window
bounded, the run's baseline thinned evenly and carried from the previous attempt's heartbeat."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path

from rtool.core.heartbeat import Heartbeat, RunState, StepSample, read_heartbeat
from rtool.shim import Guard
from rtool.shim.steplog import BASELINE, RECENT, WARMUP, StepLog
from tests.helpers import wait_for


def _slowest(seconds: float, rank: int = 3) -> dict[str, object]:
    return {
        "slowest_rank": rank,
        "slowest_node": "n2",
        "slowest_lag": 0.123456,
        "slowest_seconds": seconds,
    }


def test_warm_up_left_out_window_bounded_baseline_thinned() -> None:
    log = StepLog()
    assert log.fields() == {}
    for i in range(WARMUP):
        log.add(_slowest(100.0 + i))  # start-up: in neither
    log.add({})  # an agreement before every rank had a step time: nothing
    log.add(_slowest(-1.0))
    assert log.fields() == {}
    for i in range(1000):
        log.add(_slowest(1.0 + i / 1000))
    f = log.fields()
    recent = f["step_recent"]
    assert len(recent) == RECENT and recent[-1] == StepSample(1.999, 3, "n2", 0.1235)
    assert all(x < 100 for x in f["step_baseline"]), "the warm-up is not in the baseline"
    base = f["step_baseline"]
    assert BASELINE // 2 <= len(base) <= BASELINE and f["step_baseline_stride"] == 16
    steps = [round(b - a, 6) for a, b in itertools.pairwise(base)]
    assert len(set(steps)) == 1, "evenly spread over the whole run"
    assert base[0] < 1.02 and base[-1] > 1.95


def test_the_baseline_is_carried_from_the_previous_attempt_the_window_is_not() -> None:
    log = StepLog()
    for _i in range(WARMUP + 40):
        log.add(_slowest(0.5))
    prev = Heartbeat(RunState.STOPPED, 1.0).replace(**log.fields())
    again = StepLog()
    again.carry(Heartbeat.from_json(prev.to_json()))
    assert again.baseline == [0.5] * 40 and again.stride == 1 and not again.recent
    assert again.fields()["step_recent"] == ()


def test_one_process_samples_its_step_time() -> None:
    log = StepLog()
    for _ in range(WARMUP + 2):
        log.add({"slowest_seconds": 0.25})
    assert log.fields()["step_recent"] == (StepSample(0.25), StepSample(0.25))


def test_a_single_process_guard_samples_at_its_heartbeat_writes(
    make_guard: Callable[..., Guard], tmp_path: Path
) -> None:
    """No torch.distributed: the periodic heartbeat write samples the recent step time."""
    hb = tmp_path / "heartbeat.json"
    g = make_guard(heartbeat=hb, heartbeat_interval=0.05)
    for s in range(200):
        g.step(s)
        time.sleep(0.01)

    def sampled() -> Heartbeat | None:
        got = read_heartbeat(hb)
        return got if got is not None and len(got.step_recent) >= 3 else None

    got = wait_for(sampled, 10, 0.05, "samples in the heartbeat")
    assert isinstance(got, Heartbeat)
    assert all(0.005 < s.seconds < 0.5 and s.rank is None for s in got.step_recent), got
    assert got.step_baseline and got.slowest_rank is None
