"""The heartbeat file never goes back: a record made before a stop never lands after it.

The monitor thread makes its periodic record, then writes it; a stop made by the training
thread in between used to be overwritten by it (seen in CI on 24.11: after a non-finite-loss
stop the file still said `running` with the previous run's `killed` carried over)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rtool.core.heartbeat import Heartbeat, RunState, read_heartbeat
from rtool.shim.heartbeat_writer import HeartbeatWriter


def test_a_periodic_record_made_before_a_stop_never_lands_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "hb.json"
    writer = HeartbeatWriter(path, Heartbeat(state=RunState.RUNNING, time=1.0))
    made, go = threading.Event(), threading.Event()
    to_json = Heartbeat.to_json

    def late(self: Heartbeat) -> str:  # the monitor thread, descheduled after making its record
        if self.state is RunState.RUNNING and not go.is_set():
            made.set()
            go.wait(10)
        return to_json(self)

    monkeypatch.setattr(Heartbeat, "to_json", late)
    periodic = threading.Thread(
        target=writer.progress, args=(RunState.RUNNING, {"step": 3}), kwargs={"bounded": False}
    )
    periodic.start()
    assert made.wait(10)
    writer.final(RunState.STOPPED, {"step": 4, "stop_reason": "nonfinite_loss"})
    go.set()
    periodic.join(10)
    got = read_heartbeat(path)
    assert got is not None and got.state is RunState.STOPPED, got
    assert got.stop_reason == "nonfinite_loss" and got.step == 4
