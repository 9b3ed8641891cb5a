"""Hangs caught inside the process: no step for `hang_after` -> every thread's stack in the
log, the other ranks told (the abort file), the heartbeat says why, exit 89; a save, an
evaluation (`alive()`) or the start-up before the first step is never a hang."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rtool.core.heartbeat import RunState, read_heartbeat
from rtool.runs import stacks
from rtool.shim import HANG_EXIT_CODE, Guard
from rtool.shim.hang import Abort, crash_reason, read_abort, write_abort
from tests.helpers import wait_for
from tests.shim.conftest import ROOT, start_toy, toy_env

MakeGuard = Callable[..., Guard]


def test_a_hung_loop_dumps_its_stacks_tells_the_others_and_exits_89(tmp_path: Path) -> None:
    hb, abort = tmp_path / "hb.json", tmp_path / "abort"
    proc = start_toy(
        tmp_path,
        *("--steps", "1000", "--step-seconds", "0.05", "--hang-at", "20"),
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_POLL_INTERVAL="0.1",
        RTOOL_HANG_AFTER="1s",
        RTOOL_ABORT_FILE=str(abort),
        RTOOL_LAUNCH="2",
    )
    try:
        assert proc.stdout is not None
        wait_for(lambda: "hanging at step" in proc.stdout.readline(), 30, 0, "the hang")
        t0 = time.monotonic()
        out, _ = proc.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == HANG_EXIT_CODE, out
    assert 0.9 < waited < 1.0 + 3.0, waited  # the threshold, a poll, the dumps
    # every thread's stack: faulthandler's, then py-spy's (installed with rtool)
    assert "HUNG at step 19" in out and "in main" in out and "Thread 0x" in out, out[-3000:]
    assert "py-spy dump" in out and ("(idle)" in out or "(active)" in out), out[-3000:]
    got = read_heartbeat(hb)
    assert got is not None and got.state is RunState.STOPPED and got.stop_reason == "hung"
    assert got.exit_code == HANG_EXIT_CODE and got.step == 19 and got.launch == 2
    assert "no step for" in str(got.stop_detail) and got.first_step_time is not None
    told = read_abort(str(abort), launch=2, pid=0)
    assert told is not None and told.reason == "hung" and told.rank == 0


def test_saves_evaluation_and_start_up_are_not_hangs(make_guard: MakeGuard, tmp_path: Path) -> None:
    fired: list[float] = []
    switch = tmp_path / "save"
    g = make_guard(lambda s: time.sleep(1.0), hang_after="0.4s", save_switch=switch)
    # record instead of ending the test process
    g._p.watch.on_hang = fired.append  # type: ignore[method-assign]
    time.sleep(0.8)  # model loading: no first step yet
    assert not fired
    g.step(0)
    switch.touch()
    wait_for(lambda: g.step(1).saved, 5, 0.05, "the save")  # 1 s inside step(): not a hang
    assert not fired
    for _ in range(8):  # an evaluation of 1.2 s, one alive() per batch
        g.alive()
        time.sleep(0.15)
    assert not fired
    wait_for(lambda: fired, 3, 0.05, "the hang once nothing moves")
    assert 0.4 <= fired[0] < 1.0


def test_auto_threshold_follows_the_loops_rhythm_after_a_start_up_grace(
    make_guard: MakeGuard,
) -> None:
    g = make_guard(lambda s: None, hang_after="auto")
    assert g._p.watch.hang.threshold() == 300.0  # before the first step: the start-up grace
    g._p.timing.first_step, g._p.watch.hang._last = 0, (5, 0)
    g._p.timing.longest_step = 0.1
    assert g._p.watch.hang.threshold() == 300.0  # 5 steps in: still warming up
    g._p.watch.hang._last = (20, 0)
    assert (
        g._p.watch.hang.threshold() == 300.0
    )  # no save seen yet: one may be under way, unannounced
    g.mark_saved(18, 0.2)
    assert g._p.watch.hang.threshold() == 5.0  # a loop of 0.1 s steps: hung within seconds
    g._p.timing.longest_step = 600.0
    assert g._p.watch.hang.threshold() == 6000.0  # 10 min steps: not before its own rhythm says so
    assert make_guard(lambda s: None)._p.watch.hang.threshold() is None  # the shim alone: off


def test_auto_calls_a_fast_loop_hung_within_seconds(make_guard: MakeGuard) -> None:
    g = make_guard(lambda s: None, hang_after="auto")
    fired: list[float] = []
    # record instead of ending the test process
    g._p.watch.on_hang = fired.append  # type: ignore[method-assign]
    for step in range(40):  # past the start-up grace, with a save seen
        g.step(step)
        if step == 10:
            g.mark_saved(step, 0.05)
        time.sleep(0.05)
    t0 = time.monotonic()
    wait_for(lambda: fired, 40, 0.05, "the hang of a loop of 0.05 s steps")
    assert not any(fired[1:]) and 5.0 <= fired[0] < 20.0, fired  # 10 steps, at least 5 s
    assert time.monotonic() - t0 < 20.0


PEER = """
import sys, time
from rtool.shim import Guard
guard = Guard(lambda s: None, poll_interval=0.05, hang_after=sys.argv[1],
              abort_file=sys.argv[2], heartbeat=sys.argv[3])
for step in range(100000):
    if sys.argv[4] == "crash" and step == 20:
        raise RuntimeError("boom")
    if sys.argv[4] == "hang" and step == 20:
        time.sleep(3600)
    time.sleep(0.02)
    guard.step(step)
"""


def _rank(tmp: Path, rank: int, *args: str) -> subprocess.Popen[str]:
    env = toy_env(tmp, PYTHONPATH=str(ROOT), RANK=str(rank), RTOOL_LAUNCH="1")
    return subprocess.Popen(
        [sys.executable, "-c", PEER, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_one_rank_hung_or_crashed_ends_the_others_at_once(tmp_path: Path) -> None:
    for fault in ("hang", "crash"):
        abort = tmp_path / f"abort-{fault}"
        faulty = _rank(tmp_path, 1, "0.5s", str(abort), str(tmp_path / f"hb1-{fault}"), fault)
        other = _rank(tmp_path, 0, "60s", str(abort), str(tmp_path / f"hb0-{fault}"), "run")
        try:
            faulty.communicate(timeout=60)
            t0 = time.monotonic()
            out, _ = other.communicate(timeout=60)
            waited = time.monotonic() - t0
        finally:
            for p in (faulty, other):
                if p.poll() is None:
                    p.kill()
        assert faulty.returncode == (HANG_EXIT_CODE if fault == "hang" else 1)
        assert other.returncode == HANG_EXIT_CODE and waited < 2.0, (fault, waited, out)
        got = read_heartbeat(tmp_path / f"hb0-{fault}")
        assert got is not None and got.stop_reason == "peer_failed", got
        word = "hung" if fault == "hang" else "crashed: RuntimeError: boom"
        assert "rank 1 on " in str(got.stop_detail) and word in str(got.stop_detail)


GONE = """
import sys
from rtool.shim import Guard
from rtool.shim.hang import Abort, write_abort
guard = Guard(lambda s: None, poll_interval=600, hang_after="600s", abort_file=sys.argv[1],
              heartbeat=sys.argv[2])
for step in range(30):
    guard.step(step)
# rank 1 crashed (its crash hook tells the others first), then this rank's collective fails
write_abort(sys.argv[1], Abort(1, "n2", 4242, 1, "crashed", "RuntimeError: boom"))


def all_reduce():
    raise RuntimeError("[pair.cc:553] Connection closed by peer [127.0.0.1]:29500")


all_reduce()
"""


def _rank0_raises(
    tmp_path: Path, source: str
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """Run `source` as rank 0 of launch 1: (its abort file, its heartbeat, the finished run)."""
    abort, hb, script = tmp_path / "abort", tmp_path / "hb0", tmp_path / "train.py"
    script.write_text(source)
    env = toy_env(tmp_path, PYTHONPATH=str(ROOT), RANK="0", RTOOL_LAUNCH="1")
    argv = [sys.executable, str(script), str(abort), str(hb)]
    return abort, hb, subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_a_rank_that_crashes_after_another_rank_failed_names_that_rank(tmp_path: Path) -> None:
    """Rank 0's all-reduce raised because rank 1 was gone; its monitor (a poll of 600 s) never
    read the abort file: the crash hook does, so the heartbeat blames rank 1, not gloo."""
    abort, hb, res = _rank0_raises(tmp_path, GONE)
    assert res.returncode == 1 and "Connection closed by peer" in res.stderr, res.stderr
    got = read_heartbeat(hb)
    assert got is not None and got.state is RunState.STOPPED, got
    assert got.stop_reason == "peer_failed" and got.step == 29, got
    detail = str(got.stop_detail)
    assert detail.startswith("rank 1 on n2 crashed: RuntimeError: boom; this rank crashed"), detail
    assert "Connection closed by peer" in detail
    told = read_abort(str(abort), launch=1, pid=0)
    assert told is not None and told.rank == 1  # the first failure stays the one told
    # where this rank was: its stack file, from the exception's frames, as the others' dumps
    (where,) = stacks.read_stacks(str(abort), launch=1)
    line = next(i for i, t in enumerate(GONE.splitlines(), 1) if "Connection closed" in t)
    assert (where.rank, where.where) == (0, f"all_reduce at train.py:{line}"), where


FIRST = GONE.replace(
    'write_abort(sys.argv[1], Abort(1, "n2", 4242, 1, "crashed", "RuntimeError: boom"))', ""
)


def test_a_rank_whose_peer_vanished_tells_the_others_it_lost_a_peer(tmp_path: Path) -> None:
    """A node died under the launch: its rank left no word, and the first rank whose collective
    raised gloo's error writes the abort file. It says that rank lost a peer, not that it
    crashed, so the other ranks do not blame it for the dead node."""
    abort, hb, res = _rank0_raises(tmp_path, FIRST)
    assert res.returncode == 1 and "Connection closed by peer" in res.stderr, res.stderr
    told = read_abort(str(abort), launch=1, pid=0)
    assert told is not None and told.rank == 0 and told.reason == "lost a peer", told
    assert told.text().startswith("rank 0 on "), told.text()
    assert "lost a peer: RuntimeError: [pair.cc:553] Connection closed by peer" in told.text()
    own = read_heartbeat(hb)  # its own record keeps its own error
    assert own is not None and own.state is RunState.CRASHED, own
    assert "Connection closed by peer" in str(own.error), own.error


# Verbatim: the errors ranks of the 16-node array raised when n17 died (bench/array_spare.py,
# torch 2.13 gloo, 2026-11-29); NCCL's from the nccl-error signature's sourced examples.
GONE_TEXTS = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:185. This is typically caused by a remote worker "
    "crashing. Check the logs of the remote worker before reporting an error. GLHF!",
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read "
    "error [127.0.0.1]:32682: Connection reset by peer. This is typically caused by a remote "
    "worker hanging or bugs in the application.",
    "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
    "prematurely.",
    "DistBackendError: NCCL communicator was aborted on rank 3.",
)


def test_which_errors_say_a_peer_is_gone() -> None:
    assert [crash_reason(t) for t in GONE_TEXTS] == ["lost a peer"] * len(GONE_TEXTS)
    for own in (
        "RuntimeError: boom",
        "CUDA error: an illegal memory access was encountered",
        "ConnectionResetError: [Errno 104] Connection reset by peer",  # a data loader's socket
    ):
        assert crash_reason(own) == "crashed", own


def test_an_abort_file_of_another_launch_or_user_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "abort"
    write_abort(str(path), Abort(1, "n2", 4242, 0, "hung", "no step for 9s"))
    assert read_abort(str(path), launch=1, pid=1) is None  # an older launch's
    assert read_abort(str(path), launch=0, pid=4242) is None  # its own
    got = read_abort(str(path), launch=0, pid=1)
    assert got is not None and got.text() == "rank 1 on n2 hung: no step for 9s"
    path.unlink()
    path.write_text(json.dumps({"rank": 1}))  # not rtool's
    assert read_abort(str(path), launch=0, pid=1) is None
    link = tmp_path / "link"
    link.symlink_to(path)
    assert read_abort(str(link), launch=0, pid=1) is None


def test_without_hang_after_a_hung_loop_is_left_to_the_watchdogs(tmp_path: Path) -> None:
    proc = start_toy(
        tmp_path,
        *("--steps", "100", "--step-seconds", "0.01", "--hang-at", "5"),
        RTOOL_POLL_INTERVAL="0.05",
    )
    try:
        assert proc.stdout is not None
        wait_for(lambda: "hanging at step" in proc.stdout.readline(), 30, 0, "the hang")
        time.sleep(2.0)
        assert proc.poll() is None  # off by default: the log/heartbeat watchdog's job
    finally:
        proc.kill()
        proc.communicate(timeout=30)
