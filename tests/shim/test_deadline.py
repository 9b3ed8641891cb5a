"""Lose less time at each fault: a deadline signal stops at the job's end minus the measured
save time and a margin, not when it lands; a process that reaches no safe point after SIGTERM
is ended (so a requeue takes effect at once), its heartbeat saying why."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core.heartbeat import RunState, read_heartbeat
from rtool.shim import REQUEUE_EXIT_CODE, Decision, Guard
from rtool.shim import deadline as shim_deadline
from tests.helpers import wait_for
from tests.shim.conftest import ROOT, start_toy, toy_env

MakeGuard = Callable[..., Guard]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def train_until_stop(
    guard: Guard, timeout: float = 20, step_s: float = 0.01
) -> tuple[Decision, float]:
    step = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at = time.time()  # the step boundary (a stop's save runs inside step())
        d = guard.step(step)
        if d.stopping:
            return d, at
        step += 1
        time.sleep(step_s)
    pytest.fail("the guard never stopped")


def test_a_deadline_signal_trains_on_until_end_minus_the_learned_lead(
    make_guard: MakeGuard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shim_deadline, "EXIT_SLACK", 0.5)
    switch = tmp_path / "save-now"
    saved_at: list[float] = []

    def save(step: int) -> None:
        time.sleep(0.4)
        saved_at.append(time.time())

    g = make_guard(save, save_switch=switch, end_time=time.time() + 600)
    switch.touch()  # one save, measured: ~0.4 s
    wait_for(lambda: g.step(0).saved or not switch.exists(), 5, 0.02, "the switch save")
    end = time.time() + 4.0
    g._p.config.end_time = end  # the job's EndTime as Slurm would tell it
    os.kill(os.getpid(), signal.SIGUSR1)  # lands 4 s before the end
    d, stopped_at = train_until_stop(g)
    lead = end - (g._p.deadline.signal_stop_at or 0)
    assert d.reason == "time_limit" and "SIGUSR1 announced the end" in str(d.detail), d
    # the lead is 2 x the measured save + the exit slack: no poll interval, no step in it
    assert 2 * 0.4 + 0.5 <= lead < 2 * 0.5 + 0.5, lead
    # stopped at the last step boundary before end - lead, the save done before the end
    assert end - lead - 0.15 <= stopped_at <= end - lead + 0.02, (end - stopped_at, lead)
    assert saved_at and saved_at[-1] < end - 0.5


def test_the_lead_leaves_the_exit_earlier_attempts_took(
    make_guard: MakeGuard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wide launch needs seconds from its stop to its job's end (every rank's exit, the
    launcher's, the batch shell's record): the batch records of an earlier attempt say 2.0 s,
    so the lead after the deadline signal is 2 x the save + the slack + those 2 s."""
    monkeypatch.setattr(shim_deadline, "EXIT_SLACK", 0.5)
    records = tmp_path / "hb.json.attempts"
    hb = {"state": "stopped", "stop_job_id": "41", "stop_time": 1000.0}
    started = {"event": "start", "job_id": "41", "restart": 0, "time": 900.0}
    ended = {**started, "event": "end", "time": 1002.0, "heartbeat": hb}
    records.write_text(json.dumps(started) + "\n" + json.dumps(ended) + "\n")
    records.chmod(0o600)
    monkeypatch.setenv("RTOOL_RUN_RECORDS", str(records))
    switch = tmp_path / "save-now"
    g = make_guard(lambda s: time.sleep(0.2), save_switch=switch, end_time=time.time() + 600)
    switch.touch()  # one save, measured: ~0.2 s
    wait_for(lambda: g.step(0).saved or not switch.exists(), 5, 0.02, "the switch save")
    end = time.time() + 6.0
    g._p.config.end_time = end
    os.kill(os.getpid(), signal.SIGUSR1)
    d, stopped_at = train_until_stop(g)
    lead = end - (g._p.deadline.signal_stop_at or 0)
    assert 2 * 0.2 + 0.5 + 2.0 <= lead < 2 * 0.3 + 0.5 + 2.0, lead
    assert "exit 2.0s measured in earlier attempts" in str(d.detail), d.detail
    assert end - lead - 0.15 <= stopped_at <= end - lead + 0.02, (end - stopped_at, lead)


def test_the_stop_is_made_at_the_last_step_boundary_not_at_the_poll(
    make_guard: MakeGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps of 0.3 s, a poll every second: the stop still comes within one step of the
    stop time (the step path reads the clock once the stop time is near), never after it."""
    monkeypatch.setattr(shim_deadline, "EXIT_SLACK", 0.2)
    end = time.time() + 3.0
    g = make_guard(lambda s: time.sleep(0.1), exit_before_end="1s", end_time=end, poll_interval=1)
    d, stopped_at = train_until_stop(g, step_s=0.3)
    assert d.reason == "time_limit" and d.saved
    assert end - 1.0 - 0.3 - 0.05 <= stopped_at <= end - 1.0 + 0.02, end - stopped_at


def test_auto_on_a_short_job_keeps_a_share_of_it_not_the_60_s_floor(
    make_guard: MakeGuard,
) -> None:
    """`exit_before_end = "auto"` (rtool submit's default) before any save was measured: a
    short job stops ~10 s before its end (not at once for the 60 s floor); an hour-long
    one keeps the 60 s floor."""
    t0 = time.time()
    short = make_guard(lambda s: None, exit_before_end="auto", end_time=t0 + 15)
    d, stopped_at = train_until_stop(short, step_s=0.05)
    assert d.reason == "time_limit" and d.saved
    assert stopped_at - t0 >= 3.0 and 9.0 <= t0 + 15 - stopped_at <= 11.5, stopped_at - t0
    short.close()
    long = make_guard(lambda s: None, exit_before_end="auto", end_time=time.time() + 3600)
    long.step(0)
    wait_for(lambda: long._p.deadline._span is not None, 5, 0.05, "the end known")
    assert long._p.deadline.margin() == 60.0


def test_a_deadline_signal_stops_at_once_without_an_end_or_far_from_it(
    make_guard: MakeGuard,
) -> None:
    far = make_guard(lambda s: None, end_time=time.time() + 3600)  # > deadline_window (15 m)
    os.kill(os.getpid(), signal.SIGUSR1)
    t0 = time.monotonic()
    d, _ = train_until_stop(far)
    assert d.reason == "signal" and d.detail == "SIGUSR1" and time.monotonic() - t0 < 2
    far.close()
    nowhere = make_guard(lambda s: None)  # no job id, no end time: nothing to wait for
    os.kill(os.getpid(), signal.SIGUSR1)
    assert nowhere.step(1).reason == "signal"


def test_a_loop_stuck_after_sigterm_is_ended_and_says_so(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    proc = start_toy(
        tmp_path,
        *("--steps", "1000", "--step-seconds", "0.05", "--hang-at", "20"),
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_AUTO_REQUEUE="1",
        RTOOL_POLL_INTERVAL="0.1",
        RTOOL_UNRESPONSIVE_AFTER="auto",
    )
    try:
        assert proc.stdout is not None
        wait_for(lambda: "hanging at step" in proc.stdout.readline(), 30, 0, "the hang")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # the handler notes it; no step ever comes
        out, _ = proc.communicate(timeout=30)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == REQUEUE_EXIT_CODE, out  # the batch script requeues at once
    assert waited < 8, waited  # bound: max(5 s, 2 x longest step + ...), not KillWait
    got = read_heartbeat(hb)
    assert got is not None and got.state is RunState.STOPPED and got.stop_reason == "unresponsive"
    assert "no safe point within" in str(got.stop_detail) and got.exit_code == REQUEUE_EXIT_CODE
    assert "no safe point within" in out and "Thread" in out  # the stacks, for the post-mortem


STUCK_IN_C = """
import os, sys, time, torch, torch.distributed as dist
from rtool.shim import Guard
rank = int(os.environ["RANK"])
dist.init_process_group("gloo")
guard = Guard(lambda s: None, poll_interval=0.1, heartbeat=sys.argv[1], auto_requeue=True)
for step in range(3):
    t = torch.ones(1); dist.all_reduce(t); guard.step(step); time.sleep(0.05)
if rank == 0:
    print("stuck", flush=True)
    dist.recv(torch.zeros(1), src=1)  # never sent: stuck in C++, no Python handler runs
else:
    time.sleep(60)
"""


def test_a_rank_stuck_in_a_collective_is_ended_through_the_wakeup_fd(tmp_path: Path) -> None:
    """The training thread never returns to Python (a gloo recv that never completes), so
    the Python handler never runs: the shim's thread sees SIGTERM on the wakeup fd."""
    hb = tmp_path / "hb.json"
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = toy_env(tmp_path, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=port, PYTHONPATH=str(ROOT))  # fmt: skip
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", STUCK_IN_C, str(hb)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    stuck = procs[0]
    try:
        assert stuck.stdout is not None
        wait_for(lambda: "stuck" in stuck.stdout.readline(), 60, 0, "rank 0 to be stuck")
        time.sleep(0.5)
        t0 = time.monotonic()
        stuck.send_signal(signal.SIGTERM)
        out, _ = stuck.communicate(timeout=30)
        waited = time.monotonic() - t0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)
    assert stuck.returncode == REQUEUE_EXIT_CODE and waited < 8, (waited, out)
    assert "in recv" in out  # every thread's stack, dumped before the end
    got = read_heartbeat(hb)
    assert got is not None and got.stop_reason == "unresponsive" and got.step == 2


def test_the_end_time_is_read_from_scontrol_with_the_cores_parser() -> None:
    from datetime import datetime

    from rtool.shim.slurm import parse_end_time

    text = (
        "JobId=5 JobName=train\n   RunTime=00:00:05 TimeLimit=00:02:00 TimeMin=N/A\n"
        "   StartTime=2026-01-02T03:04:05 EndTime=2026-01-02T03:06:05 Deadline=N/A\n"
    )
    assert parse_end_time(text) == datetime(2026, 1, 2, 3, 6, 5).timestamp()
    assert parse_end_time(text.replace("EndTime=2026-01-02T03:06:05", "EndTime=Unknown")) is None
    assert parse_end_time(text.replace("2026-01-02T03:06:05", "soon")) is None
    assert parse_end_time("no such job") is None


def test_an_array_task_reads_its_own_end_time_not_another_tasks() -> None:
    """`scontrol show job <array id>` lists every task, and Slurm gives the array's own id to
    its last task: the shim looks itself up as `<array>_<task>` and reads its own record."""
    from datetime import datetime

    from rtool.shim.slurm import own_job_id, parse_end_time

    done = (
        "JobId=11 ArrayJobId=10 ArrayTaskId=1 JobState=COMPLETED\n   EndTime=2026-01-02T03:00:00\n"
    )
    last = "JobId=10 ArrayJobId=10 ArrayTaskId=2 JobState=RUNNING\n   EndTime=2026-01-02T03:09:00\n"
    both = f"{last}\n{done}"
    mine = datetime(2026, 1, 2, 3, 9).timestamp()
    assert parse_end_time(both, "10_2") == mine
    assert parse_end_time(f"{done}\n{last}", "10_2") == mine
    assert parse_end_time(both, "10") == mine  # JobId=10
    assert parse_end_time(both) is None  # several records and no id: none is taken as its own
    assert parse_end_time(done, "10_2") is None
    env = {"SLURM_JOB_ID": "10", "SLURM_ARRAY_JOB_ID": "10", "SLURM_ARRAY_TASK_ID": "2"}
    assert own_job_id("10", env) == "10_2"
    assert own_job_id("10", {"SLURM_JOB_ID": "10"}) == "10"
    assert own_job_id("77", env) == "77"  # another job: as given


def test_a_long_save_on_sigterm_is_not_cut_short_by_the_unresponsive_timer(
    tmp_path: Path,
) -> None:
    """SIGTERM while no save was measured yet (the unresponsive bound is its 5 s floor), and
    the stop's save takes 8 s: the timer covers only reaching the safe point, so the save
    finishes, the checkpoint is written and the process exits as a saved stop does."""
    hb = tmp_path / "hb.json"
    proc = start_toy(
        tmp_path,
        *("--steps", "100000", "--step-seconds", "0.05", "--save-seconds", "8"),
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_AUTO_REQUEUE="1",
        RTOOL_POLL_INTERVAL="0.1",
        RTOOL_UNRESPONSIVE_AFTER="auto",
    )
    try:
        assert proc.stdout is not None
        wait_for(lambda: "step 5 " in proc.stdout.readline(), 30, 0, "step 5")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == REQUEUE_EXIT_CODE, out
    assert "no safe point" not in out, out
    saved = [line for line in out.splitlines() if line.startswith("saved step ")]
    assert len(saved) == 1, out
    ckpt = (tmp_path / "checkpoint.json").read_text()
    assert f'"step": {saved[0].split()[-1]}' in ckpt
    got = read_heartbeat(hb)
    assert got is not None and got.state is RunState.STOPPED and got.stop_reason == "signal"
    assert got.exit_code == REQUEUE_EXIT_CODE and got.last_saved_step == int(saved[0].split()[-1])


def test_a_preemption_is_read_from_the_jobs_preempt_time() -> None:
    from datetime import datetime

    from rtool.shim.slurm import Preemption, parse_preemption

    text = (
        "JobId=7 JobName=train\n   Partition=low AllocNode:Sid=h:1\n"
        "   PreemptEligibleTime=2026-01-02T03:04:00 PreemptTime=2026-01-02T03:04:05\n"
    )
    at = datetime(2026, 1, 2, 3, 4, 5).timestamp()
    assert parse_preemption(text, 1.0, 0) == (at, "low", True)
    not_preempted = text.replace("PreemptTime=2026-01-02T03:04:05", "PreemptTime=None")
    assert parse_preemption(not_preempted + "   Restarts=0\n", 1.0, 0) is None
    # GraceTime 0: Slurm requeued the job at once (COMPLETING, no PreemptTime, Restarts up)
    requeued = "JobId=7\n   JobState=COMPLETING Restarts=1\n   Partition=low0\n"
    assert parse_preemption(requeued, 1.0, 0) == (1.0, "low0", False)
    assert parse_preemption(requeued, 1.0, 1) is None
    assert parse_preemption("no such job", 1.0, 0) is None
    # 24.11 keeps an earlier attempt's PreemptTime: not this attempt's preemption
    later = text + "   StartTime=2026-01-02T03:05:00 EndTime=Unknown\n   Restarts=1\n"
    assert parse_preemption(later, 1.0, 1) is None
    assert Preemption(at, "low", 20).left(at + 5) == 15
    assert Preemption(at, "low", 20).left(at + 25) == 0
    assert Preemption(at, "low0", 0).left(at + 1) is None


def test_save_every_auto_follows_the_typical_save_not_one_slow_one(make_guard: MakeGuard) -> None:
    g = make_guard(None, save_every="auto")
    for seconds in (0.005, 0.005, 0.2, 0.005):  # one save 40x slower (a file system hiccup)
        g.mark_saved(0, seconds)
    assert g._p.monitor.save_interval() == pytest.approx(0.5)  # the median of the recent saves
    assert g._p.timing.longest_save == 0.2  # the stop before the time limit still plans for it
    for _ in range(5):  # saves got slower for good: the cadence follows within a few saves
        g.mark_saved(0, 0.05)
    assert g._p.monitor.save_interval() == pytest.approx(5.0)
