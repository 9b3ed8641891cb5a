"""The heartbeat record shared by the shim (writer) and the watchdogs / run view (readers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rtool.core.heartbeat import (
    ErrorInfo,
    Heartbeat,
    HeartbeatFormatError,
    RunState,
    read_heartbeat,
)


def test_round_trip_and_unknown_keys_are_tolerated() -> None:
    hb = Heartbeat(
        RunState.STOPPED,
        1700000000.5,
        run="llm-7b",
        job_id="12",
        step=40,
        last_saved_step=40,
        last_save_seconds=1.25,
        stop_reason="signal",
        error=ErrorInfo("RuntimeError", "boom", 'File "t.py", line 3, in main'),
    )
    data = json.loads(hb.to_json())
    assert data["state"] == "stopped" and data["error"]["type"] == "RuntimeError"
    assert Heartbeat.from_json(hb.to_json()) == hb
    data["a_key_from_a_newer_writer"] = {"x": 1}
    assert Heartbeat.from_dict(data) == hb


def test_the_first_format_is_read_with_its_old_key_names() -> None:
    old = {"version": 1, "state": "stopped", "time": 5, "last_stop_reason": "nonfinite_loss",
           "last_save_step": 7, "save_seconds": 2, "max_step_seconds": 0.5}  # fmt: skip
    hb = Heartbeat.from_dict(old)
    assert (hb.stop_reason, hb.last_saved_step) == ("nonfinite_loss", 7)
    assert (hb.longest_save_seconds, hb.longest_step_seconds) == (2.0, 0.5)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"state": "running", "time": "yesterday"}, "time: expected a number, got str"),
        ({"state": "running", "time": 1, "step": 1.5}, "step: expected a whole number"),
        ({"state": "running", "time": 1, "step": True}, "step: expected a whole number"),
        ({"state": "dancing", "time": 1}, "state: 'dancing' is not one of starting"),
        ({"time": 1}, "no 'state'"),
        ({"state": "crashed", "time": 1, "error": "x"}, "error: expected an object"),
        ([1, 2], "not a JSON object"),
    ],
)
def test_wrong_types_are_refused_with_one_line(data: object, message: str) -> None:
    with pytest.raises(HeartbeatFormatError, match=message) as err:
        Heartbeat.from_dict(data)
    assert "\n" not in str(err.value)


def test_read_heartbeat_is_bounded_and_never_blocks_or_follows_links(tmp_path: Path) -> None:
    path = tmp_path / "hb.json"
    assert read_heartbeat(path) is None
    path.write_text(Heartbeat(RunState.RUNNING, 3.0, step=2).to_json())
    assert read_heartbeat(path) == Heartbeat(RunState.RUNNING, 3.0, step=2)
    with pytest.raises(HeartbeatFormatError, match="larger than 10 bytes"):
        read_heartbeat(path, max_bytes=10)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    with pytest.raises(HeartbeatFormatError, match="link"):
        read_heartbeat(link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would hang here
    with pytest.raises(HeartbeatFormatError, match="not a regular file"):
        read_heartbeat(fifo)
    path.write_text("{not json")
    with pytest.raises(HeartbeatFormatError, match="not JSON"):
        read_heartbeat(path)


CRASH = """
import sys, time
from rtool.shim import Guard
guard = Guard(heartbeat=sys.argv[1], poll_interval=0.05)
def load_model():
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
load_model()
"""


def test_a_crash_at_start_is_recorded_in_the_heartbeat(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    env = {**os.environ, "RTOOL_RUN": "llm-7b", "SLURM_JOB_ID": "77"}
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CRASH), str(hb)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1 and "RuntimeError: CUDA out of memory" in res.stderr  # as before
    got = read_heartbeat(hb)
    assert got is not None and got.state is RunState.CRASHED, got
    assert got.run == "llm-7b" and got.job_id == "77" and got.stop_reason == "crashed"
    assert got.error is not None and got.error.type == "RuntimeError"
    assert got.error.message.startswith("CUDA out of memory")
    assert got.error.last_line.endswith("in load_model")
