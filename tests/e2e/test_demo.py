"""The demo with --with-servers, run as scripts/demo's last line runs it (`python -m
devtools.demo`), on the real local Slurm: every scenario step, exact step accounting, alerts
delivered once each (plus a resolved notice) to real SMTP and Slack-like servers, on the 3-node
cluster (a node fails under the training). One run of the demo (~90 s) carries most of the
end-to-end assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from devtools.demo.workspace import Timing
from devtools.localslurm import control
from tests.e2e.conftest import ROOT


@pytest.fixture(scope="module")
def demo(slurm_cluster: control.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("demo") / "ws"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RTOOL_", "TOY_"))}
    env["SLURM_CONF"] = str(slurm_cluster.conf)
    res = subprocess.run(
        [sys.executable, "-m", "devtools.demo", "--with-servers", "--dir", str(root)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
        stdin=subprocess.DEVNULL,
    )
    summary = json.loads((root / "summary.json").read_text())
    return res, summary, root


def _event(summary: dict[str, Any], name: str) -> dict[str, Any]:
    (ev,) = [e for e in summary["events"] if e["name"] == name]
    return ev


@pytest.mark.timeout(480)
def test_demo_exits_0_and_every_step_happened(demo: Any) -> None:
    res, summary, _ = demo
    assert res.returncode == 0, res.stdout + res.stderr
    assert summary["ok"] and summary["problems"] == []
    names = [e["name"] for e in summary["events"]]
    assert names == [
        "time-limit",
        "save-switch",
        "hang",
        "node-failure",
        "kill-switch",
        "finished",
    ]
    assert all(e["ok"] for e in summary["events"]), summary["events"]
    assert "Every step happened as expected." in res.stdout
    assert summary["wall_seconds"] < 180  # the whole demo stays under three minutes


@pytest.mark.timeout(480)
def test_steps_union_exact_no_step_twice_after_a_save(demo: Any) -> None:
    _, summary, _ = demo
    train = summary["accounting"]["demo-train"]
    # union: every step 0..last, nothing the final checkpoint covers is missing
    assert train["holes"] == [] and train["steps_lost"] == 0
    assert train["distinct_steps"] == train["last_step"] + 1
    assert train["run_twice_after_save"] == [] and train["bad_resumes"] == []
    # rtool stop saved the last step of the stopped run
    assert train["final_checkpoint"] == _event(summary, "kill-switch")["data"]["saved"]
    # only the work of the hung run and of the run on the failed node after their last save
    # was redone or thrown away
    hang = _event(summary, "hang")["data"]
    saved = _event(summary, "save-switch")["data"]["saved"]
    failed = _event(summary, "node-failure")["data"]
    unsaved = set(range(saved + 1, hang["hang_step"]))
    unsaved |= set(range(failed["checkpoint"] + 1, failed["failed_step"] + 1))
    assert train["redone"] and set(train["redone"]) <= unsaved
    assert set(train["discarded"]) <= unsaved
    # demo-limit trained to the end through Slurm's time limits: every step exactly once
    limit = summary["accounting"]["demo-limit"]
    steps = Timing().limit_steps
    assert limit["distinct_steps"] == limit["steps_run"] == steps
    assert limit["runs"] >= 2 and limit["final_checkpoint"] == steps - 1 and limit["ok"]
    assert summary["steps_lost"] == 0


@pytest.mark.timeout(480)
def test_resume_after_the_time_limit_signal(demo: Any) -> None:
    _, summary, _ = demo
    data = _event(summary, "time-limit")["data"]
    assert data["signal"] == "USR1"
    assert data["resumed_at"] == data["saved"] + 1
    # the next run of the training starts exactly after each save
    resumes = summary["accounting"]["demo-limit"]["resumes"]
    assert [first for _, first in resumes][:2] == [0, data["saved"] + 1]


@pytest.mark.timeout(480)
def test_hang_detected_requeued_and_resumed(demo: Any) -> None:
    _, summary, root = demo
    data = _event(summary, "hang")["data"]
    saved = _event(summary, "save-switch")["data"]["saved"]
    assert data["resumed_at"] == saved + 1
    assert data["detect_seconds"] < 8 + 3 * 4 + 10  # stale + a few ticks
    requeued = data["requeued"]
    out = (root / "train" / f"demo-train-{requeued}.out").read_text()
    assert "hanging at step" in out  # the hung run
    assert "is present; exiting without starting the run" in out  # its requeued run
    # py-spy comes with rtool: the alert carried the hung toy's stack, and the demo showed it
    dump = data["stack_dump"]
    assert dump[0].startswith("stack dump in the alert: Process "), dump
    assert any("train_toy.py:" in line for line in dump[1:]), dump
    res, _, _ = demo
    assert "stack dump in the alert: Process " in res.stdout


@pytest.mark.timeout(480)
def test_node_failure_the_run_goes_on_on_another_node(demo: Any) -> None:
    res, summary, _ = demo
    data = _event(summary, "node-failure")["data"]
    assert data["node"] in ("n2", "n3") and data["resumed_on"] not in (data["node"], "n1")
    assert data["sacct_node_fail"] == data["node"]  # accounting recorded the failed attempt
    assert data["resumed_at"] == data["checkpoint"] + 1
    assert data["redone"] == data["failed_step"] - data["checkpoint"] >= 0
    assert data["resume_seconds"] < 30
    assert f"node {data['node']} is down" in res.stdout


@pytest.mark.timeout(480)
def test_kill_switch_ends_the_array_in_seconds(demo: Any) -> None:
    _, summary, _ = demo
    data = _event(summary, "kill-switch")["data"]
    later = data["later_tasks"]
    assert len(later) >= 4  # tasks 2-5 and the requeued one
    assert all(seconds <= 5 for seconds in later.values()), later
    assert data["burn_seconds"] < 60


@pytest.mark.timeout(480)
def test_alerts_delivered_once_each_with_a_resolved_notice(demo: Any) -> None:
    _, summary, _ = demo
    expected = {"alert": 1, "resolved": 1}
    assert summary["alerts"] == {"log": expected, "email": expected, "slack": expected}
    for channel in ("email", "slack", "log"):
        first, second = summary["messages"][channel]
        assert first.startswith("[rtool CRITICAL] log ") and "not written for" in first
        assert second.startswith("[rtool RESOLVED] log ") and "lasted" in second


@pytest.mark.timeout(480)
def test_finished_cancels_the_rest_of_the_array(demo: Any) -> None:
    _, summary, root = demo
    data = _event(summary, "finished")["data"]
    assert data["cancelled"] and data["done_marker"] and data["signals"] >= 1
    assert len(data["tasks_run"]) < 10
    # no task of demo-limit started after the one that finished
    assert len(list((root / "limit").glob("*.out"))) == len(data["tasks_run"])
