"""The decisions before an in-place restart (rtool/nodes/restart.py), pure: a stop
is not a failure, a restarted launch without progress is not restarted again, what ended the
launch, which nodes Slurm or the launch's log blame. (On the real Slurm: tests/e2e/
test_restart_in_place.py and test_multinode.py.)"""

from __future__ import annotations

from pathlib import Path

from rtool.core.heartbeat import ErrorInfo, Heartbeat, RunState
from rtool.core.slurm.nodes import NodeState
from rtool.nodes.preflight_job import JobInfo
from rtool.nodes.restart import (
    Failed,
    bad_states,
    blamed_by_log,
    launch_heartbeat,
    launch_log,
)

INFO = JobInfo(job_id="88_3", name="llm", nodes=["n1", "n2"], partition=None, restarts=1)


def _hb(state: RunState, launch: int = 0, **kw: object) -> Heartbeat:
    return Heartbeat(
        state=state, time=1.0, job_id="91", array_job_id="88", array_task_id="3",
        restart_count=1, launch=launch, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_stop_is_not_a_failure_and_what_ended_a_launch_is_named() -> None:
    stopped = _hb(RunState.STOPPED, stop_reason="time_limit", stop_detail="SIGUSR1 ...")
    assert "stopped (time_limit" in str(Failed(1, 0, stopped).stopped_on_purpose())
    assert Failed(1, 0, _hb(RunState.FINISHED)).stopped_on_purpose() == "the training finished"
    hung = _hb(RunState.STOPPED, stop_reason="hung", stop_detail="no step for 9.0s")
    assert Failed(89, 0, hung).stopped_on_purpose() is None
    assert Failed(89, 0, hung).cause() == ("hung", "no step for 9.0s")
    crashed = _hb(RunState.CRASHED, error=ErrorInfo("RuntimeError", "CUDA error"))
    assert Failed(1, 0, crashed).cause() == ("crashed", "RuntimeError: CUDA error")
    assert Failed(137, 0, None).cause() == ("signal", "killed by SIGKILL (exit code 137)")
    assert Failed(2, 0, None).cause() == ("exit", "exit code 2")
    assert Failed(137, 0, crashed, oom_kills=3, oom_before=2).cause()[0] == "oom_kill"


def test_a_restarted_launch_without_a_step_past_its_start_is_not_restarted_again() -> None:
    assert not Failed(1, 0, None).no_progress()  # the first launch: restart it once
    assert Failed(1, 1, None).no_progress()  # died before its guard wrote anything
    assert Failed(1, 1, _hb(RunState.CRASHED, 1, step=500, step_at_start=500)).no_progress()
    assert not Failed(1, 1, _hb(RunState.CRASHED, 1, step=520, step_at_start=500)).no_progress()


def test_only_this_launchs_heartbeat_counts(tmp_path: Path) -> None:
    path = tmp_path / "hb.json"
    path.write_text(_hb(RunState.CRASHED, launch=1).to_json())
    assert launch_heartbeat(str(path), INFO, 1) is not None
    assert launch_heartbeat(str(path), INFO, 2) is None  # launch 2 died before writing one
    other = JobInfo(job_id="88_4", name="llm", nodes=["n1"], partition=None, restarts=1)
    assert launch_heartbeat(str(path), other, 1) is None
    assert launch_heartbeat(str(tmp_path / "none.json"), INFO, 1) is None


def test_nodes_blamed_by_slurm_or_by_the_launchs_log() -> None:
    states = [
        NodeState("n1", "debug", "mixed", None),
        NodeState("n2", "debug", "down*", "Not responding"),
        NodeState("n3", "debug", "drained", "maintenance"),  # not the job's
    ]
    assert bad_states(states, ["n1", "n2"]) == {"n2": "Slurm shows it down* (Not responding)"}
    log = (
        "rtool: launch 0 of the training on n[1-2]\n"
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus (n2)\n"
        "rtool: launch 1 of the training on n[1-2]\n"
        "step 10 loss 0.5\nRuntimeError: boom\n"
    )
    assert blamed_by_log(launch_log(log), ["n1", "n2"]) == {}  # an earlier launch's XID
    nccl = (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(...) ran for "
        "600000 milliseconds before timing out (peer n2)"
    )
    # the waiting rank's timeout blames nobody (issue 37), even when it names its peer
    assert blamed_by_log(launch_log(log + nccl + "\n"), ["n1", "n2"]) == {}
    xid = "Nov 23 14:00:00 n2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off"
    got = blamed_by_log(launch_log(log + nccl + "\n" + xid + "\n"), ["n1", "n2"])
    assert list(got) == ["n2"] and got["n2"].startswith("GPU XID error")
    assert blamed_by_log(("CUDA out of memory",), ["n1"]) == {}  # the training's, not the node's


def test_a_periodic_heartbeat_that_lags_the_steps_is_not_no_progress() -> None:
    """Issue 35.6: a relaunch that ran steps 0-4 in under 5 s and died without its last word
    left the periodic heartbeat at step 0: it read 'made no progress (no step past 0)'."""
    lagging = _hb(RunState.RUNNING, 1, step=0, step_at_start=0)
    assert not Failed(1, 1, lagging).no_progress()
    assert not Failed(1, 1, _hb(RunState.STARTING, 1, step_at_start=0)).no_progress()
    # its last word names the last step it saw
    crashed = _hb(RunState.CRASHED, 1, step=4, step_at_start=0)
    assert not Failed(1, 1, crashed).no_progress()
    stopped = _hb(RunState.STOPPED, 1, step=0, step_at_start=0, stop_step=3, stop_reason="hung")
    assert not Failed(89, 1, stopped).no_progress()
    assert Failed(1, 1, _hb(RunState.CRASHED, 1, step=0, step_at_start=0)).no_progress()
