"""The toy training in subprocesses: real signals, real files; every stop resumes exactly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import wait_for
from tests.shim.conftest import ROOT, run_toy, start_toy, steps_run

HEAVY = ["typer", "jinja2", "slack_sdk", "requests", "pydantic", "torch", "rtool.core.proc"]


def test_import_rtool_shim_imports_no_heavy_module() -> None:
    code = "import json, sys, rtool.shim; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout))
    assert "rtool.shim" in loaded and "psutil" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY)
    assert heavy == [], heavy
    # nothing but the standard library, psutil and rtool's shim + stdlib-only core modules
    others = {m.split(".")[0] for m in loaded} - set(sys.stdlib_module_names)
    others -= {"__main__", "psutil", "rtool", "_distutils_hack"}
    assert {m for m in others if not m.startswith("__editable__")} == set(), others
    core = sorted(m for m in loaded if m.startswith("rtool.core."))
    expected = ["rtool.core.cgroup", "rtool.core.checkpoints", "rtool.core.ckptscan"]
    expected += ["rtool.core.heartbeat", "rtool.core.identity", "rtool.core.stdchild"]
    assert core == [*expected, "rtool.core.units"], core


def _wait_steps(log: Path, n: int) -> None:
    wait_for(lambda: len(steps_run(log)) >= n, 30, 0.05, f"{n} steps in {log}")


def _checkpoint(tmp: Path) -> int:
    return int(json.loads((tmp / "checkpoint.json").read_text())["step"])


def test_signals_stop_and_every_resume_continues_from_the_saved_step(tmp_path: Path) -> None:
    log = tmp_path / "steps.log"
    args = ("--steps", "40", "--step-seconds", "0.03")
    saved = -1
    for sig in (signal.SIGUSR1, signal.SIGTERM, None):
        seen = len(steps_run(log))
        proc = start_toy(tmp_path, *args)
        if sig is not None:
            _wait_steps(log, seen + 8)
            proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        ran = steps_run(log)
        assert ran[seen] == saved + 1, out  # resumed right after the saved step
        saved = _checkpoint(tmp_path)
        assert saved == ran[-1], out  # saved exactly the last step run
    assert "training finished" in out
    ran = steps_run(log)
    assert ran == list(range(40)), ran  # every step once, none twice
    state = json.loads((tmp_path / "checkpoint.json").read_text())
    assert state["step"] == 39 and state["value"] == sum(range(40))


def test_kill_switch_stops_then_later_runs_exit_at_once(tmp_path: Path) -> None:
    log, kill = tmp_path / "steps.log", tmp_path / "kill-switch"
    args = ("--steps", "200", "--step-seconds", "0.03")
    proc = start_toy(tmp_path, *args, RTOOL_KILL_SWITCH=str(kill))
    _wait_steps(log, 5)
    kill.touch()
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    saved = _checkpoint(tmp_path)
    assert saved == steps_run(log)[-1]
    code, out = run_toy(tmp_path, *args, RTOOL_KILL_SWITCH=str(kill))
    assert code == 0 and "starting" not in out
    assert steps_run(log)[-1] == saved  # the next task ran nothing
    kill.unlink()
    proc = start_toy(tmp_path, *args, RTOOL_KILL_SWITCH=str(kill))
    _wait_steps(log, saved + 3)
    proc.kill()
    proc.communicate(timeout=30)
    assert steps_run(log)[saved + 1] == saved + 1


def test_save_switch_saves_and_training_goes_on(tmp_path: Path) -> None:
    log, switch = tmp_path / "steps.log", tmp_path / "save-now"
    proc = start_toy(
        tmp_path, "--steps", "60", "--step-seconds", "0.03", RTOOL_SAVE_SWITCH=str(switch)
    )
    _wait_steps(log, 5)
    switch.touch()
    wait_for(lambda: not switch.exists(), 10, 0.05, "the save switch to be removed")
    saved = _checkpoint(tmp_path)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert f"saved step {saved}" in out and steps_run(log)[-1] == 59


def test_nonfinite_loss_stops_without_saving(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    code, out = run_toy(
        tmp_path,
        "--steps",
        "50",
        "--step-seconds",
        "0.01",
        "--nan-at",
        "7",
        RTOOL_MAX_NONFINITE="3",
        RTOOL_HEARTBEAT=str(hb),
    )
    assert code == 86, out
    assert "non-finite losses in a row" in out and "WITHOUT saving" in out
    assert not (tmp_path / "checkpoint.json").exists()
    data = json.loads(hb.read_text())
    assert data["stop_reason"] == "nonfinite_loss" and data["stop_step"] == 9


def test_a_save_that_hangs_on_the_way_out_is_abandoned(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    proc = start_toy(
        tmp_path,
        "--steps",
        "500",
        "--step-seconds",
        "0.02",
        "--save-seconds",
        "600",
        RTOOL_SAVE_TIMEOUT="1s",
        RTOOL_HEARTBEAT=str(hb),
    )
    _wait_steps(tmp_path / "steps.log", 3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGUSR1)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 88, out
    assert time.monotonic() - t0 < 10
    assert "did not return within 1s" in out
    assert json.loads(hb.read_text())["stop_reason"] == "save_timeout"


def test_a_hung_loop_stops_the_heartbeat(tmp_path: Path) -> None:
    hb = tmp_path / "hb.json"
    proc = start_toy(
        tmp_path,
        "--steps",
        "100",
        "--step-seconds",
        "0.02",
        "--hang-at",
        "10",
        RTOOL_HEARTBEAT=str(hb),
        RTOOL_HEARTBEAT_INTERVAL="0.1",
    )
    try:
        wait_for(
            lambda: hb.exists() and json.loads(hb.read_text())["step"] == 9,
            20,
            0.05,
            "a heartbeat at step 9",
        )
        before = hb.read_text()
        time.sleep(1.5)
        assert hb.read_text() == before  # nothing written while stuck
        assert time.time() - json.loads(before)["time"] > 1.4
    finally:
        proc.kill()
        proc.communicate(timeout=30)
