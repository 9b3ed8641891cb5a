"""One experiment-tracker run across attempts (docs/guide/trackers.md): the run's name and
attempt, exported in the forms the trackers read when they resume a run.

    WANDB_RUN_ID=<run>  WANDB_RESUME=allow      W&B: every attempt logs into one run
    MLFLOW_RUN_ID=<id>                          MLflow: the run the previous attempt logged to
                                                (only when its heartbeat recorded one)
    RTOOL_ATTEMPT=<job>+<restart>               which attempt this is (88_3+1), launch apart
    RTOOL_TENSORBOARD_DIR=tb/<run>              one TensorBoard log dir for every attempt

Only variables not set already are set (yours win), and nothing without a run name
(`RTOOL_RUN`, else `SLURM_JOB_NAME`). The Guard exports them when it is made, so make it
before `wandb.init` / `mlflow.start_run` (the HF and Lightning callbacks are made before the
trainer starts its trackers), or call `export()` first.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any

from rtool.core.heartbeat import Heartbeat

#: W&B run ids: letters, digits, `-`, `_`, `.`; at most this long.
MAX_ID = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MLFLOW_ID = re.compile(r"[0-9a-f]{32}")


def run_id(run: str) -> str:
    """The run's name as a tracker run id (unsafe characters as `-`, at most MAX_ID)."""
    return _UNSAFE.sub("-", run).strip("-.")[:MAX_ID]


def tracker_env(
    environ: MutableMapping[str, str] | None = None, previous: Heartbeat | None = None
) -> dict[str, str]:
    """The variables to set (those not set in `environ` already); `previous`: the previous
    launch's heartbeat (its MLflow run id)."""
    env = os.environ if environ is None else environ
    name = run_id(env.get("RTOOL_RUN") or env.get("SLURM_JOB_NAME") or "")
    if not name:
        return {}
    job = env.get("SLURM_JOB_ID") or "-"
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        job = f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    want = {
        "WANDB_RUN_ID": name,
        "WANDB_RESUME": "allow",
        "RTOOL_ATTEMPT": f"{job}+{env.get('SLURM_RESTART_COUNT') or 0}",
        "RTOOL_TENSORBOARD_DIR": os.path.join("tb", name),
    }
    known = previous.mlflow_run_id if previous is not None else None
    same = previous is not None and run_id(previous.run or "") == name
    if known and same and _MLFLOW_ID.fullmatch(known):
        want["MLFLOW_RUN_ID"] = known
    return {k: v for k, v in want.items() if not env.get(k)}


def export(
    environ: MutableMapping[str, str] | None = None, previous: Heartbeat | None = None
) -> dict[str, str]:
    """Set `tracker_env` in the environment; what was set."""
    env = os.environ if environ is None else environ
    found = tracker_env(env, previous)
    env.update(found)
    return found


def fields() -> dict[str, Any]:
    """The heartbeat's `mlflow_run_id`: the active MLflow run of this process, when the
    training imported mlflow and started one (never imported here)."""
    mlflow = sys.modules.get("mlflow")
    try:
        active = mlflow.active_run() if mlflow is not None else None
        rid = active.info.run_id if active is not None else None
    except Exception:  # a tracker's failure is never the training's
        return {}
    return {"mlflow_run_id": rid} if isinstance(rid, str) and _MLFLOW_ID.fullmatch(rid) else {}
