"""The pure `cron` watchdog check."""

from __future__ import annotations

from datetime import datetime

from rtool.core.alert import Status
from rtool.core.slurm import SqueueJob
from rtool.cron.store import chain_name
from rtool.watchdogs.cron_chain import ChainObservation, check_cron


def job(state: str, name: str) -> SqueueJob:
    return SqueueJob(
        "7", "7", None, state, None, "me", "debug", 1, 0.0, None, None, datetime.now(), "", name
    )


NAME = "rtool-cron-abc"


def check(beat: dict | None, jobs: list[SqueueJob] | None, now: float = 1000.0) -> Status:
    obs = ChainObservation(beat, jobs, None if jobs is not None else "squeue: timed out")
    return check_cron("/c", NAME, obs, period=60, grace=10, now=now).status


def test_fresh_tick_and_queued_chain_is_ok() -> None:
    assert check({"time": 950.0}, [job("PENDING", NAME)]) == Status.OK
    assert check(None, [job("PENDING", NAME)]) == Status.OK  # started, first tick pending


def test_stale_tick_is_critical_even_with_a_job_queued() -> None:
    assert check({"time": 929.0}, [job("PENDING", NAME)]) == Status.CRITICAL


def test_a_fresh_start_counts_like_a_tick() -> None:
    assert check({"time": 500.0, "started": 990.0}, [job("PENDING", NAME)]) == Status.OK
    assert check({"started": 900.0}, [job("PENDING", NAME)]) == Status.CRITICAL


def test_no_chain_job_is_critical() -> None:
    assert check({"time": 990.0}, []) == Status.CRITICAL
    assert check({"time": 990.0}, [job("COMPLETED", NAME), job("PENDING", "other")]) == (
        Status.CRITICAL
    )
    assert check(None, []) == Status.CRITICAL


def test_squeue_failure_is_unknown_not_critical() -> None:
    assert check({"time": 990.0}, None) == Status.UNKNOWN


def test_chain_name_identifies_user_and_dir(tmp_path: object) -> None:
    from pathlib import Path

    a, b = chain_name(Path("/x/a")), chain_name(Path("/x/b"))
    assert a != b and a.startswith("rtool-cron-")
    assert chain_name(Path("/x/a"), user="u1") != chain_name(Path("/x/a"), user="u2")


def test_a_chain_stopped_on_purpose_is_ok_and_says_when_and_by_whom() -> None:
    from rtool.core.identity import current_user

    stop = {"stopped": 900.0, "stopped_by": current_user(), "stopped_how": "rtool cron stop"}
    old = {"time": 100.0}  # its last tick long ago: without the mark, CRITICAL twice over
    res = check_cron("/c", NAME, ChainObservation(old, [], None, stop), 60, 10, 1000.0)
    assert res.status == Status.OK
    assert "stopped at" in res.summary and "by you (rtool cron stop)" in res.summary
    assert "rtool cron start" in res.summary
    # squeue down: still known to be stopped on purpose
    res = check_cron("/c", NAME, ChainObservation(old, None, "timeout", stop), 60, 10, 1000.0)
    assert res.status == Status.OK
    # someone else's stop mark names them; a job queued since means it runs again
    res = check_cron(
        "/c", NAME, ChainObservation(old, [], None, {**stop, "stopped_by": "bob"}), 60, 10, 1000.0
    )
    assert "by bob" in res.summary
    fresh = ChainObservation({"time": 990.0}, [job("PENDING", NAME)], None, stop)
    assert check_cron("/c", NAME, fresh, 60, 10, 1000.0).summary.endswith("chain queued")
    assert check({"time": 990.0}, []) == Status.CRITICAL  # no mark: dead
