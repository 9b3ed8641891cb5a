"""The arithmetic of issue #14's target in bench/goodput_target.py (pure: no Slurm, no clock)."""

from __future__ import annotations

import pytest

from bench.goodput_target import (
    FRACTION,
    MARGIN,
    SLACK_S,
    Latency,
    back_to_training,
    first_step_times,
    fraction_line,
    goodput,
    margin_line,
    startup_latencies,
    target_lines,
)


def test_first_step_times_one_per_process_in_time_order() -> None:
    steps = [(10.2, 1), (10.3, 1), (70.9, 2), (71.0, 2), (131.5, 3)]
    assert first_step_times(steps) == [10.2, 70.9, 131.5]


def test_startup_latency_from_floored_starts() -> None:
    # sacct prints whole seconds: the starts are floored; the first steps are not
    lat = startup_latencies([10.0, 70.0, 131.0], [12.5, 71.25, 134.0])
    assert lat.samples == (2.5, 1.25, 3.0)
    assert lat.median == 2.5


def test_startup_latency_skips_attempts_that_never_trained_and_never_counts_twice() -> None:
    # 70: an attempt cancelled before its process stepped; 75: the next one, which trained
    lat = startup_latencies([70.0, 10.0, 75.0, 75.0], [11.0, 77.0])
    assert lat.samples == (1.0, 2.0)
    assert Latency(()).median is None


def test_goodput_and_fraction_verdict() -> None:
    assert goodput(3000, 0.1, 400.0) == pytest.approx(0.75)
    assert goodput(3000, 0.1, 0.0) is None
    assert "meets" in fraction_line(0.98 * 0.98, 0.98)
    assert "MISSES" in fraction_line(0.97 * 0.98, 0.98)
    line = fraction_line(0.90, 0.98)
    assert "MISSES" in line and "0.918" in line
    assert "needs" in fraction_line(0.8, None)
    assert FRACTION == 0.98 and MARGIN == 0.1
    assert "= +0.100 (meets" in margin_line(0.5, 0.4, "wall")
    assert "= +0.050 (MISSES" in margin_line(0.45, 0.4, "wall")


def test_back_to_training_within_latency_plus_slack() -> None:
    assert back_to_training(7.0, 2.0) == (5.0, True)
    extra, ok = back_to_training(10.7, 2.5)
    assert extra == pytest.approx(8.2) and not ok
    lines = target_lines([("hang", 10.7), ("crash", 0.5)], Latency((2.0, 2.5, 3.0)))
    assert lines[0].startswith("start-up latency (ideal, 3 attempt(s)): median 2.5s")
    assert "+8.2s (OVER" in lines[1] and "-2.0s (ok" in lines[2]
    assert f"+{SLACK_S:.0f}s" in lines[1]
    assert target_lines([("hang", 1.0)], Latency(())) == [
        "start-up latency: - (needs the ideal setup)"
    ]
    # a hang's time back includes the threshold it takes to tell one: it does not count
    assert back_to_training(12.0, 2.0, 5.0) == (5.0, True)
    lines = target_lines([("hang", 12.5), ("crash", 4.0)], Latency((2.0,)), hang_after=5.0)
    assert "hang             to train 12.5s - threshold 5s - latency = +5.5s (OVER" in lines[1]
    assert "crash            to train 4.0s - latency = +2.0s (ok" in lines[2]
