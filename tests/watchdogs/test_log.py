"""log watchdog on real files: aged with os.utime, truncated, rotated; the shim's heartbeat."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.watchdogs.base import ProbeEnv
from rtool.watchdogs.config import LogWatch
from rtool.watchdogs.log import LogWatchdog


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def sweep(state: StateDir, **spec: object):
    wd = LogWatchdog([LogWatch(**spec)], 5.0)  # type: ignore[arg-type]
    [res] = wd.check(wd.probe(ProbeEnv(None, state)), time.time())
    return res


@pytest.fixture
def state(tmp_path: Path) -> StateDir:
    return StateDir(tmp_path / "state")


def test_fresh_then_stale(tmp_path, cli):
    log = tmp_path / "train.out"
    log.write_text("step 1\n")
    r = cli("watch", "log", str(log), "--stale", "30m", "--no-notify")
    assert r.code == 0 and r.out.startswith(f"LOG OK - {log} written 0s ago")
    age(log, 3600)
    r = cli("watch", "log", str(log), "--stale", "30m", "--no-notify")
    assert r.code == 2
    text, perf = r.out.strip().split(" | ")
    assert text == f"LOG CRITICAL - {log} not written for 1h (limit 30m)"
    assert perf.startswith(f"'{log} age'=3600") and perf.endswith("s;;1800;0")


def test_truncation_is_activity(tmp_path, state):
    log = tmp_path / "train.out"
    log.write_text("x" * 1000)
    age(log, 3600)
    assert sweep(state, path=str(log), stale="30m").status == Status.CRITICAL
    log.write_text("y")  # truncated and rewritten, then the mtime is made old again
    age(log, 3600)
    res = sweep(state, path=str(log), stale="30m")
    assert res.status == Status.OK, res.summary
    # and without change since, it goes stale by the remembered time, not the mtime
    res = sweep(state, path=str(log), stale="30m")
    assert res.status == Status.OK


def test_glob_newest_match_and_rotation(tmp_path, state):
    old = tmp_path / "train-100.out"
    old.write_text("old")
    age(old, 7200)
    pattern = str(tmp_path / "train-*.out")
    res = sweep(state, path=pattern, stale="30m")
    assert res.status == Status.CRITICAL and str(old) in res.summary
    new = tmp_path / "train-101.out"  # the next array task's log
    new.write_text("new")
    age(new, 3600)  # even with an old mtime, a new file is activity
    res = sweep(state, path=pattern, stale="30m")
    assert res.status == Status.OK and str(new) in res.summary


def test_stale_log_of_a_job_that_is_not_running_is_not_a_hang(slurm_cluster, tmp_path, cli):
    log = tmp_path / "train.out"
    log.write_text("done\n")
    age(log, 3600)
    r = cli("watch", "log", str(log), "--job-name", "rt-not-running", "--no-notify")
    assert r.code == 0
    assert "but job rt-not-running is not running (not a hang)" in r.out


def write_hb(path: Path, **fields: object) -> None:
    base = {"version": 2, "pid": os.getpid(), "host": "n1", "state": "running"}
    path.write_text(json.dumps({**base, **fields}))


def test_heartbeat_is_the_sharper_signal(tmp_path, state):
    log, hb = tmp_path / "train.out", tmp_path / "hb.json"
    log.write_text("noisy log keeps changing\n")  # the log is fresh ...
    write_hb(hb, step=420, time=time.time() - 2000, step_seconds=1.5)
    res = sweep(state, path=str(log), heartbeat=str(hb), stale="30m")
    assert res.status == Status.CRITICAL  # ... but the loop has not stepped for 33 min
    assert res.summary == "heartbeat not written for 33m (limit 30m) at step 420"
    write_hb(hb, step=421, time=time.time() - 5, step_seconds=1.5)
    res = sweep(state, path=str(log), heartbeat=str(hb), stale="30m")
    assert res.status == Status.OK and "at step 421" in res.summary


def test_non_finite_loss_stop_is_critical(tmp_path, state):
    from rtool.core.heartbeat import Heartbeat, RunState
    from rtool.shim.heartbeat_writer import HeartbeatWriter  # the shim's writer: its format

    hb = tmp_path / "hb.json"
    writer = HeartbeatWriter(hb, Heartbeat(RunState.STARTING, time.time(), job_id="4242"))
    writer.progress(RunState.RUNNING, {"step": 6, "time": time.time(), "step_seconds": 0.5})
    res = sweep(state, path=str(tmp_path / "x.out"), heartbeat=str(hb), stale="30m")
    assert res.status == Status.OK and "at step 6" in res.summary
    stop = {"stop_reason": "nonfinite_loss", "stop_step": 7, "stop_time": time.time()}
    writer.final(RunState.STOPPED, {"step": 7, "time": time.time(), **stop})
    res = sweep(state, path=str(tmp_path / "x.out"), heartbeat=str(hb), stale="30m")
    assert res.status == Status.CRITICAL
    assert "non-finite loss at step 7 (nonfinite_loss)" in res.summary
    assert res.fields["stop_reason"] == "nonfinite_loss"  # the key the shim writes, read back
    # the next run carries the old stop reason in its running heartbeat: not an alert
    nxt = HeartbeatWriter(hb, Heartbeat(RunState.STARTING, time.time(), job_id="4243"))
    assert nxt.current.stop_reason == "nonfinite_loss"
    nxt.progress(RunState.RUNNING, {"step": 8, "time": time.time()})
    res = sweep(state, path=str(tmp_path / "x.out"), heartbeat=str(hb), stale="30m")
    assert res.status == Status.OK, res.summary


def test_a_crashed_run_is_not_a_hang_and_says_why(tmp_path, state):
    hb = tmp_path / "hb.json"
    error = {"type": "RuntimeError", "message": "CUDA out of memory", "last_line": "x"}
    write_hb(hb, step=3, time=time.time() - 9999, state="crashed", error=error)
    res = sweep(state, path=str(tmp_path / "x.out"), heartbeat=str(hb), stale="30m")
    assert res.status == Status.OK, res.summary
    assert "crashed: RuntimeError: CUDA out of memory) at step 3, not a hang" in res.summary


def test_done_marker_means_finished(tmp_path, state):
    from rtool.shim.heartbeat_writer import done_marker

    hb = tmp_path / "hb.json"
    write_hb(hb, step=9, time=time.time() - 9999)
    done_marker(hb).write_text("{}")
    res = sweep(state, path=str(tmp_path / "x.out"), heartbeat=str(hb), stale="30m")
    assert res.status == Status.OK and "finished" in res.summary


#: A real hung Python process: it blocks forever in a function whose name py-spy must show.
HUNG = """
import threading
def wait_for_a_batch_that_never_comes():
    print("ready", flush=True)
    threading.Event().wait()
wait_for_a_batch_that_never_comes()
"""


@pytest.fixture
def hung_python() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", HUNG], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_hang_alert_carries_a_py_spy_dump_of_the_hung_process(tmp_path, cli, hung_python):
    """py-spy is a dependency: the alert of a hang carries the hung process's stack out of
    the box, once per hang."""
    log, alerts = tmp_path / "train.out", tmp_path / "alerts.log"
    log.write_text("x")
    age(log, 3600)
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n[notify.log]\npath = "{alerts}"\n')
    pid = str(hung_python.pid)
    args = ("--config", str(cfg), "watch", "log", str(log), "--dump-stacks", "--pid", pid)
    r = cli(*args, "--stale", "30m", "--json")
    assert r.code == 2, r.out + r.err
    stacks = json.loads(r.out)["results"][0]["fields"]["stacks"]
    assert f"Process {pid}" in stacks, stacks
    assert "wait_for_a_batch_that_never_comes (<string>:" in stacks, stacks
    [line] = alerts.read_text().splitlines()
    assert "CRITICAL" in line and "wait_for_a_batch_that_never_comes" in line
    again = cli(*args, "--stale", "30m", "--json")
    assert "stacks" not in json.loads(again.out)["results"][0]["fields"]  # same hang: once


def test_bad_on_hang_is_a_usage_error(tmp_path, cli):
    r = cli("watch", "log", str(tmp_path / "x"), "--on-hang", "reboot")
    assert r.code == 3 and "--on-hang" in r.err and "Traceback" not in r.err
