"""Guard in-process: real switch files, real signals (os.kill), the real polling thread."""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rtool.core.heartbeat import RunState, read_heartbeat
from rtool.shim import (
    NONFINITE_EXIT_CODE,
    REQUEUE_EXIT_CODE,
    Decision,
    Guard,
    ShimConfigError,
)
from tests.helpers import wait_for

MakeGuard = Callable[..., Guard]


class Acted(Decision):
    """For the type checker only: a Decision whose step is set."""

    step: int


def step_until(guard: Guard, start: int = 0, timeout: float = 10) -> Acted:
    """Call guard.step() with increasing steps until it does something."""
    deadline = time.monotonic() + timeout
    step = start
    while time.monotonic() < deadline:
        d = guard.step(step)
        if d.save_requested or d.stopping:
            assert d.step == step
            return d  # type: ignore[return-value]
        step += 1
        time.sleep(0.002)
    pytest.fail("the guard never acted")


def test_save_switch_saves_continues_and_removes_the_file(
    make_guard: MakeGuard, tmp_path: Path
) -> None:
    saves: list[int] = []
    switch = tmp_path / "save-now"
    g = make_guard(saves.append, save_switch=switch)
    assert g.step(0) == Decision()
    switch.touch()
    d = step_until(g, 1)
    assert d.saved and not d.stopping and d.reason == "save_switch"
    assert saves == [d.step]
    assert not switch.exists()
    # training goes on; a second request is honoured again
    assert not g.step(d.step + 1).stopping
    switch.touch()
    d2 = step_until(g, d.step + 2)
    assert saves == [d.step, d2.step] and not switch.exists()


def test_failed_save_keeps_the_switch_and_is_not_retried_until_touched(
    make_guard: MakeGuard, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def save(step: int) -> None:
        calls.append(step)
        raise OSError("disk full")

    switch = tmp_path / "save-now"
    switch.touch()
    g = make_guard(save, save_switch=switch)
    with caplog.at_level(logging.ERROR, "rtool.shim"):
        d = step_until(g)
    assert d.save_requested and not d.saved and not d.stopping
    assert switch.exists()
    assert "SAVE FAILED" in caplog.text and "disk full" in caplog.text
    time.sleep(0.3)  # several polls: the same file does not trigger again
    for s in range(d.step + 1, d.step + 50):
        assert not g.step(s).save_requested
    os.utime(switch, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    step_until(g, d.step + 50)
    assert len(calls) == 2


def test_kill_switch_saves_and_stops_with_code_0(make_guard: MakeGuard, tmp_path: Path) -> None:
    saves: list[int] = []
    kill = tmp_path / "kill"
    g = make_guard(saves.append, kill_switch=kill)
    g.exit_if_killed()  # no switch yet: returns
    kill.touch()
    d = step_until(g)
    assert (d.stopping, d.saved, d.reason, d.exit_code) == (True, True, "killed", 0)
    assert saves == [d.step]
    # exit=False: later steps repeat the decision without a second save
    assert g.step(d.step + 1) is d and saves == [d.step]
    g2 = Guard(kill_switch=kill, signals=())
    with pytest.raises(SystemExit) as exc:
        g2.exit_if_killed()
    assert exc.value.code == 0


def test_signal_sets_a_flag_and_the_next_step_saves_and_exits(
    make_guard: MakeGuard, tmp_path: Path
) -> None:
    saves: list[int] = []

    def save(step: int) -> None:
        saves.append(step)
        os.kill(os.getpid(), signal.SIGTERM)  # a second signal while saving
        time.sleep(0.05)

    before = signal.getsignal(signal.SIGUSR1)
    g = make_guard(save, exit=True)
    for s in range(5):
        g.step(s)
    os.kill(os.getpid(), signal.SIGUSR1)
    assert saves == []  # the handler itself saves nothing
    with pytest.raises(SystemExit) as exc:
        g.step(5)
    assert exc.value.code == 0
    assert saves == [5]  # one save, although SIGTERM came during it
    assert signal.getsignal(signal.SIGUSR1) == before  # handlers restored on exit
    assert g.stopping is not None and g.stopping.detail == "SIGUSR1"


def test_a_forked_child_gets_the_previous_handlers_back(make_guard: MakeGuard) -> None:
    before = signal.getsignal(signal.SIGUSR1)
    make_guard()
    assert signal.getsignal(signal.SIGUSR1) != before
    pid = os.fork()
    if pid == 0:  # e.g. a DataLoader worker: must not swallow or act on the job's signals
        os._exit(0 if signal.getsignal(signal.SIGUSR1) == before else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_time_limit_with_a_fixed_margin(make_guard: MakeGuard) -> None:
    saves: list[int] = []
    g = make_guard(saves.append, exit_before_end="2s", end_time=time.time() + 2.5)
    assert not g.step(0).stopping
    d = step_until(g, 1)
    assert d.reason == "time_limit" and d.saved and d.exit_code == 0
    assert "left of the time limit" in (d.detail or "")


def test_auto_margin_is_learned_from_the_measured_save(
    make_guard: MakeGuard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rtool.shim import deadline

    monkeypatch.setattr(deadline, "EXIT_SLACK", 0.5)

    def save(step: int) -> None:
        time.sleep(0.3)

    switch = tmp_path / "save"
    g = make_guard(
        save,
        save_switch=switch,
        exit_before_end="auto",
        end_time=time.time() + 3600,
        min_margin="1s",
        safety_factor=2.0,
    )
    for s in range(3):  # steps of ~0.4 s
        g.step(s)
        time.sleep(0.4)
    # no save measured yet: the wide margin, 2 x (0.4 step + 0 save) + poll, above the floor
    assert 0.8 < g._p.deadline.margin() < 1.6, g._p.deadline.margin()
    switch.touch()
    step_until(g, 3)
    # measured: 2 x the 0.3 s save + the exit slack (the step is handled at the boundary)
    assert 1.1 <= g._p.deadline.margin() < 1.4, g._p.deadline.margin()


def test_memory_threshold_saves_and_stops(make_guard: MakeGuard) -> None:
    saves: list[int] = []
    g = make_guard(saves.append, max_memory_used="0.1%")
    d = step_until(g)
    assert d.reason == "memory" and d.saved and "host memory" in (d.detail or "")


def test_nonfinite_losses_stop_without_saving(make_guard: MakeGuard) -> None:
    saves: list[int] = []
    g = make_guard(saves.append, max_nonfinite=3)
    assert g.check_loss(1.5)
    assert not g.check_loss(math.nan) and not g.check_loss(math.inf)
    assert g.check_loss(0.5)  # a finite loss resets the count
    assert not g.step(0).stopping
    for s in range(1, 4):
        assert not g.check_loss(float("nan"))
        d = g.step(s)
    assert (d.stopping, d.saved, d.reason, d.exit_code) == (
        True,
        False,
        "nonfinite_loss",
        NONFINITE_EXIT_CODE,
    )
    assert saves == []


@pytest.mark.parametrize(("restarts", "code"), [("0", REQUEUE_EXIT_CODE), ("2", 0)])
def test_auto_requeue_exit_code_until_max_requeues(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, restarts: str, code: int
) -> None:
    monkeypatch.setenv("RTOOL_AUTO_REQUEUE", "1")
    monkeypatch.setenv("RTOOL_MAX_REQUEUES", "2")
    monkeypatch.setenv("SLURM_RESTART_COUNT", restarts)
    monkeypatch.setenv("RTOOL_KILL_SWITCH", str(tmp_path / "kill"))
    g = Guard.from_env(save=lambda s: None, poll_interval=0.05)
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        with pytest.raises(SystemExit) as exc:
            g.step(0)
        assert exc.value.code == code
    finally:
        g.close()
    # the kill switch never asks for a requeue
    (tmp_path / "kill").touch()
    g = Guard.from_env(save=lambda s: None, poll_interval=0.05, exit=False)
    try:
        assert step_until(g).exit_code == 0
    finally:
        g.close()


def test_heartbeat_progress_stop_and_done_marker(
    make_guard: MakeGuard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hb = tmp_path / "hb" / "heartbeat.json"
    monkeypatch.setenv("RTOOL_RUN", "llm")
    g = make_guard(lambda s: time.sleep(0.05), heartbeat=hb, heartbeat_interval=0.1)
    for s in range(30):
        g.step(s)
        time.sleep(0.01)
    data = wait_for(lambda: _read(hb), 5, 0.05, "the heartbeat")
    assert isinstance(data, dict)
    assert data["state"] == "running" and 0 <= data["step"] <= 29
    assert data["pid"] == os.getpid() and data["host"] and data["version"] == 2
    assert data["run"] == "llm" and data["step_at_start"] == 0
    assert 0.005 < data["step_seconds"] < 0.5
    # a stuck loop: the file is not rewritten
    time.sleep(0.3)
    mtime = hb.stat().st_mtime_ns
    time.sleep(0.4)
    assert hb.stat().st_mtime_ns == mtime
    os.kill(os.getpid(), signal.SIGUSR1)
    g.step(30)
    stopped = read_heartbeat(hb)  # the record every reader uses
    assert stopped is not None
    assert stopped.state is RunState.STOPPED and stopped.stop_reason == "signal"
    assert stopped.stop_step == 30 and stopped.last_saved_step == 30
    assert stopped.last_save_seconds is not None and 0.04 < stopped.last_save_seconds < 1
    # the next run keeps the last stop until it stops itself; finished() writes the marker
    g2 = make_guard(lambda s: None, heartbeat=hb)
    g2.step(31)
    g2.finished()
    done = _read(Path(f"{hb}.done"))
    final = _read(hb)
    assert done is not None and done["step"] == 31
    assert final is not None and final["state"] == "finished" and final["stop_reason"] == "signal"
    make_guard(heartbeat=hb)  # a new run removes the stale done marker
    assert not Path(f"{hb}.done").exists()


def test_a_new_run_writes_a_starting_heartbeat_before_its_first_step(
    make_guard: MakeGuard, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a requeue, the previous run's heartbeat must not stand for this run while the model
    loads: creating the Guard replaces it with this run's pid, job and time."""
    hb = tmp_path / "heartbeat.json"
    old = {"version": 1, "state": "stopped", "step": 99, "time": time.time() - 3600, "pid": 1,
           "started": time.time() - 7200, "job_id": "77", "restart_count": 0,
           "stop_reason": "signal"}  # fmt: skip
    hb.write_text(json.dumps(old))
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    t0 = time.time()
    make_guard(heartbeat=hb)
    data = _read(hb)
    assert data is not None and data["state"] == "starting" and data["step"] is None
    assert data["pid"] == os.getpid() and data["job_id"] == "77" and data["restart_count"] == 1
    assert t0 <= data["time"] <= time.time() and t0 <= data["started"] <= time.time()  # type: ignore[operator]
    assert data["stop_reason"] == "signal"  # the last stop is kept until this run stops


def _read(path: Path) -> dict[str, object] | None:
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def test_bad_env_values_are_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTOOL_MAX_MEMORY_USED", "lots")
    with pytest.raises(ShimConfigError, match="max_memory_used: not a size: 'lots'"):
        Guard.from_env()
    monkeypatch.delenv("RTOOL_MAX_MEMORY_USED")
    monkeypatch.setenv("RTOOL_SIGNALS", "USR1,BOGUS")
    with pytest.raises(ShimConfigError, match="unknown signal 'BOGUS'"):
        Guard.from_env()
    monkeypatch.setenv("RTOOL_SIGNALS", "usr2, SIGTERM")
    monkeypatch.setenv("RTOOL_EXIT_BEFORE_END", "10x")
    with pytest.raises(ShimConfigError, match="exit_before_end: not a duration"):
        Guard.from_env()


def test_finished_after_a_stop_marks_nothing_done(make_guard: MakeGuard, tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    g = make_guard(lambda s: None, heartbeat=hb)
    os.kill(os.getpid(), signal.SIGUSR1)
    assert g.step(0).stopping
    g.finished()  # a loop that ignores .stopping with exit=False
    data = _read(hb)
    assert not Path(f"{hb}.done").exists() and data is not None and data["state"] == "stopped"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"signals": "USR1,KILL"}, "signals: SIGKILL cannot be caught"),
        ({"signals": ["STOP"]}, "signals: SIGSTOP cannot be caught"),
        ({"requeue_exit_code": 256}, "requeue_exit_code: must be an exit code 0-255: 256"),
        ({"requeue_exit_code": "-1"}, "requeue_exit_code: must be at least 0: '-1'"),
        ({"bogus": 1}, "unknown option 'bogus'"),
    ],
)
def test_bad_settings_are_refused_at_start_with_one_line(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    os.mkfifo(tmp_path / "fifo")  # never opened: a blocking open would hang the test
    opts = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in options.items()}
    with pytest.raises(ShimConfigError) as err:
        Guard(**opts)
    assert str(err.value) == f"rtool.shim: {message.format(tmp=tmp_path)}"


def test_options_are_one_typed_record(make_guard: MakeGuard, tmp_path: Path) -> None:
    from rtool.shim import GuardOptions

    opts = GuardOptions.parse(signals="usr2", save_timeout="2m", max_memory_used="90%")
    assert opts.signals == (signal.SIGUSR2,) and opts.save_timeout == 120.0
    assert opts.max_memory_percent == 90.0 and opts.max_memory_bytes is None
    env = {"RTOOL_KILL_SWITCH": str(tmp_path / "k"), "RTOOL_AUTO_REQUEUE": "1"}
    from_env = GuardOptions.from_env(env, requeue_exit_code=99)
    assert from_env.kill_switch == str(tmp_path / "k") and from_env.auto_requeue
    assert from_env.requeue_exit_code == 99
    g = Guard(None, GuardOptions(signals=(), poll_interval=0.05, exit=False), start=False)
    assert g.options.exit is False and g.exit_code == 0
    g.close()


def test_save_every_saves_on_a_cadence_and_auto_keeps_saves_at_one_percent(
    make_guard: MakeGuard,
) -> None:
    saved: list[tuple[int, float]] = []
    g = make_guard(lambda s: saved.append((s, time.monotonic())), save_every="0.4s")
    t0 = time.monotonic()
    step = 0
    while time.monotonic() - t0 < 2.0:
        d = g.step(step)
        assert not d.stopping
        step += 1
        time.sleep(0.01)
    assert 3 <= len(saved) <= 6, saved  # ~every 0.4 s (+ a poll), at step boundaries
    gaps = [b - a for (_, a), (_, b) in itertools.pairwise(saved)]
    assert all(0.35 < gap < 0.7 for gap in gaps), gaps
    assert g._p.timing.last_save_step == saved[-1][0]
    # auto: nothing until a save was measured, then every measured save / 1%
    auto = make_guard(None, save_every="auto")
    assert auto._p.monitor.save_interval() is None
    auto.mark_saved(0, 0.005)
    assert auto._p.monitor.save_interval() == pytest.approx(0.5)
    for s in range(1, 200):
        d = auto.step(s)
        if d.save_requested:  # framework mode: the caller saves, then says so
            assert d.reason == "periodic" and not d.stopping
            auto.mark_saved(s, 0.005)
            break
        time.sleep(0.01)
    else:
        pytest.fail("no periodic save asked for")
