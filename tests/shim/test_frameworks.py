"""The adapters against the real libraries (CPU, tiny models built in code, nothing downloaded):
Hugging Face Trainer, Lightning (1 process and 2 DDP processes), Accelerate.

Each test runs a worker (tests/shim/frameworks/) that plays several attempts of one training
in one process, as requeued jobs would, and reports what happened (see common.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from rtool.shim import NONFINITE_EXIT_CODE, REQUEUE_EXIT_CODE
from tests.shim.conftest import ROOT, toy_env

WORKERS = Path(__file__).with_name("frameworks")


def shim_env(tmp: Path, **extra: str) -> dict[str, str]:
    return toy_env(
        tmp,
        PYTHONPATH=str(ROOT),
        RTOOL_HEARTBEAT=str(tmp / "heartbeat.json"),
        RTOOL_SAVE_SWITCH=str(tmp / "save-now"),
        RTOOL_KILL_SWITCH=str(tmp / "kill-switch"),
        RTOOL_POLL_INTERVAL="0.05",
        RTOOL_AUTO_REQUEUE="1",
        **extra,
    )


def run_worker(
    tmp: Path, name: str, attempts: list[dict[str, Any]], timeout: float = 120, **env: str
) -> tuple[int, list[dict[str, Any]], str]:
    res = subprocess.run(
        [sys.executable, str(WORKERS / f"{name}_worker.py"), str(tmp), json.dumps(attempts)],
        env=shim_env(tmp, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    log = res.stdout[-4000:] + res.stderr[-8000:]
    report = tmp / "report-0.json"
    assert report.exists(), log
    return res.returncode, json.loads(report.read_text()), log


def kept(result: dict[str, Any]) -> list[int]:
    return [step for step, skipped in result["steps"] if not skipped]


def _reports_the_switch_save(result: dict[str, Any]) -> None:
    """The switch save at step 2 is in the heartbeat while the training goes on (step 4)."""
    mid = result["heartbeat_mid"]
    assert mid["state"] == "running" and mid["last_saved_step"] == 2, mid
    assert 0 < mid["last_save_seconds"] < 30 and 0 < mid["longest_save_seconds"] < 30, mid


def test_hugging_face_trainer_stops_saves_resumes_and_holds_on_nan(tmp_path: Path) -> None:
    attempts = [
        {"max_steps": 14, "save_at": 2, "signal_at": 5, "signal": "USR1", "heartbeat_at": 4},
        {"max_steps": 14, "kill_at": 7},
        {"max_steps": 14},  # the kill switch is still there: burn-through at start
        {"max_steps": 14, "nan_from": 10, "save_steps": 12, "remove_kill": True},
        {"max_steps": 14},
        {"max_steps": 14},  # restarted after finishing: nothing to do
    ]
    code, r, log = run_worker(tmp_path, "hf", attempts)
    assert code == 0, log  # the last attempt finished: sys.exit(cb.exit_code)
    a1, a2, a3, a4, a5, a6 = r
    _reports_the_switch_save(a1)
    # save switch -> checkpoint, training goes on; USR1 -> ONE checkpoint, train() returns, 85
    assert kept(a1) == [1, 2, 3, 4, 5] and a1["exit_code"] == REQUEUE_EXIT_CODE, log
    assert a1["returned"] and a1["after_rtool_on_train_end"]
    assert a1["checkpoints"] == ["checkpoint-2", "checkpoint-5"]
    hb = a1["heartbeat"]
    assert hb["state"] == "stopped" and hb["stop_reason"] == "signal" and hb["stop_step"] == 5
    assert hb["last_saved_step"] == 5 and 0 < hb["last_save_seconds"] < 30
    # the next attempt resumes at 6; kill switch -> save and stop with 0
    assert kept(a2) == [6, 7] and a2["exit_code"] == 0
    assert a2["checkpoints"][-1] == "checkpoint-7"
    assert a2["heartbeat"]["stop_reason"] == "killed"
    # burn-through: train() returns at once, no step run at all, nothing saved, exit 0
    assert a3["steps"] == [] and a3["returned"] and a3["exit_code"] == 0
    assert a3["checkpoints"] == a2["checkpoints"]
    # NaN from step 10 (default logging_nan_inf_filter=True): stop after 3, nothing saved
    # (not even the Trainer's own save_steps=12 checkpoint), weights still finite
    assert kept(a4) == [8, 9] and [s for s, _ in a4["steps"]] == [8, 9, 10, 11, 12], a4
    assert a4["exit_code"] == NONFINITE_EXIT_CODE and a4["weights_finite"]
    assert a4["checkpoints"] == a2["checkpoints"]
    assert a4["heartbeat"]["stop_reason"] == "nonfinite_loss"
    # the last attempt resumes from the last good checkpoint and finishes
    assert kept(a5) == list(range(8, 15)) and a5["heartbeat"]["state"] == "finished"
    assert a5["heartbeat"]["last_saved_step"] == 14  # the Trainer's final save, reported
    # restarted after finished(): no step runs again (the Trainer would run one), still done
    assert a6["steps"] == [] and a6["exit_code"] == 0 and a6["heartbeat"]["state"] == "finished"
    assert a6["checkpoints"] == a5["checkpoints"]
    assert (tmp_path / "heartbeat.json.done").exists()


def test_lightning_stops_with_one_checkpoint_returns_from_fit_and_holds_on_nan(
    tmp_path: Path,
) -> None:
    attempts = [
        {"max_steps": 14, "save_at": 2, "signal_at": 5, "signal": "USR1", "heartbeat_at": 4},
        {"max_steps": 14, "kill_at": 7},
        {"max_steps": 14},  # the kill switch is still there: burn-through at start
        {"max_steps": 14, "nan_from": 10, "remove_kill": True},
        {"max_steps": 14},
        {"max_steps": 14},  # restarted after finishing: nothing to do
    ]
    code, r, log = run_worker(tmp_path, "lightning", attempts)
    assert code == 0, log  # the last attempt's: sys.exit(cb.exit_code)
    a1, a2, a3, a4, a5, a6 = r
    _reports_the_switch_save(a1)
    # save switch -> checkpoint, training goes on; USR1 -> ONE checkpoint (no ModelCheckpoint
    # save beside it), fit() returns, the loggers finalize as at a normal end, exit code 85
    assert kept(a1) == [1, 2, 3, 4, 5] and a1["exit_code"] == REQUEUE_EXIT_CODE, log
    assert a1["saves"] == [2, 5] and a1["own_checkpoints"] == []
    assert a1["returned"] and a1["after_rtool_on_train_end"] and a1["logger_status"] == "success"
    hb = a1["heartbeat"]
    assert hb["state"] == "stopped" and hb["stop_reason"] == "signal" and hb["stop_step"] == 5
    assert hb["last_saved_step"] == 5 and 0 < hb["last_save_seconds"] < 30
    # resumed at 6; kill switch -> save and stop with 0
    assert kept(a2) == [6, 7] and a2["saves"] == [7] and a2["exit_code"] == 0
    assert a2["heartbeat"]["stop_reason"] == "killed" and a2["logger_status"] == "success"
    # burn-through at start: no batch, nothing saved, fit() returns, exit 0
    assert a3["steps"] == [] and a3["saves"] == [] and a3["exit_code"] == 0
    assert a3["returned"] and a3["logger_status"] == "success"
    # NaN from step 10: updates dropped, stop after 3 without any checkpoint, weights finite
    assert kept(a4) == [8, 9] and [s for s, _ in a4["steps"]] == [8, 9, 10, 11, 12], a4
    assert a4["saves"] == [] and a4["own_checkpoints"] == [] and a4["weights_finite"]
    assert a4["heartbeat"]["stop_reason"] == "nonfinite_loss" and a4["exit_code"] == 86
    # resumed at 8 and finished: rtool's checkpoint is saved at the end (no step runs twice)
    assert kept(a5) == list(range(8, 15)) and 14 in a5["saves"] and a5["exit_code"] == 0
    assert a5["heartbeat"]["state"] == "finished" and a5["heartbeat"]["last_saved_step"] == 14
    # restarted after finished(): resumes at the end, runs no step, still finished
    assert a6["steps"] == [] and a6["saves"] == [] and a6["heartbeat"]["state"] == "finished"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_lightning_ddp_two_processes_sigterm_to_one_rank_rtool_owns_the_signals(
    tmp_path: Path,
) -> None:
    """Two processes started as `srun` would (SLURM_* set): Lightning picks SLURMEnvironment
    with its auto-requeue on. SIGTERM to rank 1 only: rtool's handlers (not Lightning's bare
    SystemExit), both ranks stop at the same step with one checkpoint, 85; exact resume."""
    attempts = [
        {"max_steps": 14, "signal_at": 4, "signal": "TERM", "only_rank": 1},
        {"max_steps": 14},
    ]
    port, spec = str(_free_port()), json.dumps(attempts)
    procs = []
    for rank in (0, 1):
        slurm = {"SLURM_NTASKS": "2", "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank),
                 "SLURM_NODEID": "0", "SLURM_NNODES": "1", "SLURM_NTASKS_PER_NODE": "2",
                 "SLURM_JOB_NAME": "rtool-ddp", "SLURM_JOB_ID": "4242",
                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                 "RTOOL_SYNC_EVERY": "2"}  # fmt: skip
        log = (tmp_path / f"out-{rank}.log").open("w")
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WORKERS / "lightning_worker.py"), str(tmp_path), spec],
                env=shim_env(tmp_path, **slurm),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    try:
        codes = [p.wait(timeout=150) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    logs = "\n".join((tmp_path / f"out-{r}.log").read_text()[-6000:] for r in (0, 1))
    assert codes == [0, 0], logs  # the second attempt finished
    r0, r1 = (json.loads((tmp_path / f"report-{r}.json").read_text()) for r in (0, 1))
    stop = r0[0]["saves"][-1]
    for a1, a2 in (r0, r1):
        # both ranks: the same steps, the same stop step, one save there, exit 85, fit returned
        assert kept(a1) == list(range(1, stop + 1)) and a1["saves"] == [stop], logs
        assert a1["exit_code"] == REQUEUE_EXIT_CODE and a1["returned"]
        assert a1["logger_status"] == "success" and a1["auto_requeue"] is False
        assert kept(a2) == list(range(stop + 1, 15)) and a2["exit_code"] == 0
    assert 4 <= stop <= 6
    hb = r0[0]["heartbeat"]
    assert hb["stop_reason"] == "signal" and hb["world_size"] == 2 and hb["stop_step"] == stop
    assert r0[1]["heartbeat"]["state"] == "finished"
    assert "Requeuing SLURM job" not in logs and "SIGTERMException" not in logs


def test_plain_torch_distributed_and_accelerate_loops_under_torchrun(tmp_path: Path) -> None:
    """2 gloo ranks under torchrun: the Guard in a hand-written DDP loop, then in an
    Accelerate loop (save_state / load_state); signals reach ONE rank only."""
    attempts = [
        {"max_steps": 14, "save_at": 2, "signal_at": 5, "signal": "USR1", "only_rank": 1},
        {"max_steps": 14, "kill_at": 7},
        {"max_steps": 14},  # burn-through at start
        {"max_steps": 14, "nan_from": 10, "remove_kill": True},
        {"max_steps": 14},
        {
            "max_steps": 8,
            "loop": "accelerate",
            "save_at": 2,
            "signal_at": 4,
            "signal": "TERM",
            "only_rank": 0,
        },
        {"max_steps": 8, "loop": "accelerate"},
    ]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
           "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
           str(WORKERS / "torch_worker.py"), str(tmp_path), json.dumps(attempts)]  # fmt: skip
    env = shim_env(tmp_path, RTOOL_SYNC_EVERY="1", RTOOL_MAX_NONFINITE="3")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    log = res.stdout[-4000:] + res.stderr[-8000:]
    assert res.returncode == 0, log
    r0, r1 = (json.loads((tmp_path / f"report-{r}.json").read_text()) for r in (0, 1))
    for t1, t2, t3, t4, t5, c1, c2 in (r0, r1):
        # a signal to rank 1 only: both ranks stop at step 5, one save there, 85; exact resume
        assert kept(t1) == [1, 2, 3, 4, 5] and t1["saved_step"] == 5, log
        assert t1["exit_code"] == REQUEUE_EXIT_CODE
        assert kept(t2) == [6, 7] and t2["saved_step"] == 7 and t2["exit_code"] == 0
        assert t3["steps"] == [] and t3["saved_step"] == 7 and t3["exit_code"] == 0
        assert kept(t4) == [8, 9] and [s for s, _ in t4["steps"]] == [8, 9, 10, 11, 12]
        assert t4["exit_code"] == NONFINITE_EXIT_CODE and t4["saved_step"] == 7
        assert kept(t5) == list(range(8, 15)) and t5["exit_code"] == 0
        # Accelerate: TERM to rank 0 only, save_state at the same step on both, exact resume
        assert kept(c1) == [1, 2, 3, 4] and c1["saved_step"] == 4 and c1["exit_code"] == 85
        assert kept(c2) == [5, 6, 7, 8] and c2["exit_code"] == 0
    hb = r0[0]["heartbeat"]
    assert hb["stop_reason"] == "signal" and hb["last_saved_step"] == 5
    assert hb["last_save_seconds"] > 0 and hb["world_size"] == 2
    assert r0[3]["heartbeat"]["stop_reason"] == "nonfinite_loss"
    assert r0[4]["heartbeat"]["state"] == "finished"


def test_hugging_face_resumes_from_the_newest_checkpoint_that_was_completely_written(
    tmp_path: Path,
) -> None:
    attempts = [
        {"max_steps": 14, "save_steps": 3, "signal_at": 8},  # checkpoint-3, -6, -8
        {"max_steps": 14, "save_steps": 3, "signal_at": 11, "cut_newest": True},
        {"max_steps": 14, "save_steps": 3, "corrupt_newest": True},
    ]
    code, r, log = run_worker(tmp_path, "hf", attempts)
    assert code == 0, log
    a1, a2, a3 = r
    assert kept(a1) == list(range(1, 9)) and a1["checkpoints"][-1] == "checkpoint-8"
    # checkpoint-8 half written (no trainer_state.json): set aside, resumed from checkpoint-6
    assert kept(a2)[0] == 7 and a2["heartbeat"]["resumed_from"] == "checkpoint-6", log
    aside = a2["heartbeat"]["set_aside"]
    assert aside.startswith("checkpoint-8 (incomplete: missing trainer_state.json) -> "), aside
    assert any(c.startswith("checkpoint-8.set-aside-") for c in a2["checkpoints"])
    # checkpoint-11 complete by its files but its weights cut short: it does not load
    assert kept(a3) == list(range(10, 15)) and a3["heartbeat"]["resumed_from"] == "checkpoint-9"
    aside = a3["heartbeat"]["set_aside"]
    assert aside.startswith("checkpoint-11 (failed to load: SafetensorError: "), aside
    assert a3["heartbeat"]["state"] == "finished"


def test_lightning_resumes_from_the_newest_checkpoint_that_was_completely_written(
    tmp_path: Path,
) -> None:
    each = {"max_steps": 14, "step_files": True}
    attempts = [
        {**each, "save_at": 3, "signal_at": 6},  # rtool-step=3.ckpt, rtool-step=6.ckpt
        {**each, "save_at": 9, "signal_at": 11, "cut_newest": True},
        {**each, "corrupt_newest": True},
    ]
    code, r, log = run_worker(tmp_path, "lightning", attempts)
    assert code == 0, log
    a1, a2, a3 = r
    assert kept(a1) == list(range(1, 7)) and a1["saves"] == [3, 6]
    # rtool-step=6.ckpt cut to a third while written: too small, set aside; resumed after 3
    assert kept(a2)[0] == 4 and a2["heartbeat"]["resumed_from"] == "rtool-step=3.ckpt", log
    aside = a2["heartbeat"]["set_aside"]
    assert aside.startswith("rtool-step=6.ckpt (too small: "), aside
    # rtool-step=11.ckpt lost its last bytes: it does not load; resumed after 9
    assert kept(a3)[0] == 10 and a3["heartbeat"]["resumed_from"] == "rtool-step=9.ckpt", log
    aside = a3["heartbeat"]["set_aside"]
    assert aside.startswith("rtool-step=11.ckpt (failed to load: BadZipFile: "), aside
    assert a3["heartbeat"]["state"] == "finished" and 14 in a3["saves"]
    names = sorted(p.name for p in (tmp_path / "ckpts").iterdir())
    assert [n for n in names if ".set-aside-" in n] == [
        n for n in names if n.startswith(("rtool-step=6.ckpt.", "rtool-step=11.ckpt."))
    ]
