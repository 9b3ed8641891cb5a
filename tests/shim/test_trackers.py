"""One tracker run across attempts: the Guard exports the run's name and attempt in the forms
W&B, MLflow and a TensorBoard log dir take (none of the trackers is installed here: what is
tested is the environment the training sees)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rtool.core.heartbeat import Heartbeat, RunState
from rtool.shim.trackers import run_id, tracker_env
from tests.shim.conftest import ROOT, toy_env

MLFLOW_ID = "0123456789abcdef0123456789abcdef"
SHOW = (
    "import json, os\n"
    "from rtool.shim import Guard\n"
    "g = Guard.from_env(exit=False)\n"
    "keys = ('WANDB_RUN_ID', 'WANDB_RESUME', 'MLFLOW_RUN_ID', 'RTOOL_ATTEMPT',"
    " 'RTOOL_TENSORBOARD_DIR')\n"
    "print(json.dumps({k: os.environ.get(k) for k in keys}))\n"
    "g.close()\n"
)


def test_the_names_the_trackers_read() -> None:
    env = {
        "RTOOL_RUN": "llama 7b/lr=3e-4",
        "SLURM_JOB_ID": "91",
        "SLURM_ARRAY_JOB_ID": "88",
        "SLURM_ARRAY_TASK_ID": "3",
        "SLURM_RESTART_COUNT": "1",
    }
    assert tracker_env(env) == {
        "WANDB_RUN_ID": "llama-7b-lr-3e-4",
        "WANDB_RESUME": "allow",
        "RTOOL_ATTEMPT": "88_3+1",
        "RTOOL_TENSORBOARD_DIR": "tb/llama-7b-lr-3e-4",
    }
    assert tracker_env({**env, "WANDB_RUN_ID": "mine", "WANDB_RESUME": "must"}) == {
        "RTOOL_ATTEMPT": "88_3+1",
        "RTOOL_TENSORBOARD_DIR": "tb/llama-7b-lr-3e-4",
    }
    assert tracker_env({"SLURM_JOB_ID": "5"}) == {}  # no run name: nothing
    assert run_id("x" * 100) == "x" * 64


def test_mlflow_run_id_only_when_the_previous_launch_of_this_run_recorded_one() -> None:
    env = {"RTOOL_RUN": "llm", "SLURM_JOB_ID": "7"}
    prev = Heartbeat(state=RunState.STOPPED, time=time.time(), run="llm", mlflow_run_id=MLFLOW_ID)
    assert tracker_env(env, prev)["MLFLOW_RUN_ID"] == MLFLOW_ID
    assert "MLFLOW_RUN_ID" not in tracker_env(env, prev.replace(run="other"))
    assert "MLFLOW_RUN_ID" not in tracker_env(env, prev.replace(mlflow_run_id="../x"))
    assert "MLFLOW_RUN_ID" not in tracker_env(env, None)


def test_a_training_process_sees_them_from_the_guard_on(tmp_path: Path) -> None:
    hb = tmp_path / "heartbeat.json"
    prev = Heartbeat(state=RunState.STOPPED, time=time.time(), run="llm", mlflow_run_id=MLFLOW_ID)
    hb.write_text(prev.to_json())
    env = toy_env(tmp_path, PYTHONPATH=str(ROOT), RTOOL_HEARTBEAT=str(hb), RTOOL_RUN="llm")
    env |= {"SLURM_JOB_ID": "91", "SLURM_RESTART_COUNT": "2"}
    env = {k: v for k, v in env.items() if not k.startswith(("WANDB_", "MLFLOW_"))}
    out = subprocess.run(
        [sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "WANDB_RUN_ID": "llm",
        "WANDB_RESUME": "allow",
        "MLFLOW_RUN_ID": MLFLOW_ID,
        "RTOOL_ATTEMPT": "91+2",
        "RTOOL_TENSORBOARD_DIR": "tb/llm",
    }


RECORD = (
    "import sys, types\n"
    "from rtool.shim import Guard\n"
    "# mlflow is not installed here: a module with its active_run() shape stands in for it\n"
    "run = types.SimpleNamespace(info=types.SimpleNamespace(run_id=sys.argv[1]))\n"
    "sys.modules['mlflow'] = types.SimpleNamespace(active_run=lambda: run)\n"
    "g = Guard.from_env(exit=False)\n"
    "g.step(0)\n"
    "g.finished(0)\n"
)


def test_the_heartbeat_records_the_active_mlflow_run(tmp_path: Path) -> None:
    hb = tmp_path / "heartbeat.json"
    env = toy_env(tmp_path, PYTHONPATH=str(ROOT), RTOOL_HEARTBEAT=str(hb), RTOOL_RUN="llm")
    argv = [sys.executable, "-c", RECORD, MLFLOW_ID]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(hb.read_text())["mlflow_run_id"] == MLFLOW_ID
