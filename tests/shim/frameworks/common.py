"""What the framework workers share: attempts read from argv, triggers at a step, the report.

A worker runs several ATTEMPTS of one training in one process (the framework is imported
once: transformers and lightning take seconds to import), each a fresh Trainer and a fresh
rtool callback resuming from the last checkpoint, as a requeued job would. An attempt is a
dict: {"max_steps": N, "signal_at": k, "signal": "USR1", "save_at": k, "kill_at": k,
"nan_from": k, "heartbeat_at": k, "cut_newest": true, "corrupt_newest": true}; each trigger
fires at the START of step k (1-based, the step after it is counted), so the guard acts at
step k; `cut_newest` and `corrupt_newest` break the newest checkpoint before the attempt.
The report (report.json) holds per attempt: the steps run (with whether their update was
dropped), the exit code the callback gave, whether the train call returned, the callbacks and
loggers that ran after rtool's, the heartbeat.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from rtool.core.heartbeat import read_heartbeat

OUT = Path(sys.argv[1])
ATTEMPTS: list[dict[str, Any]] = json.loads(sys.argv[2])
POLL = 0.05  # RTOOL_POLL_INTERVAL set by the test


def fire(attempt: dict[str, Any], step: int, rank: int = 0) -> None:
    """The triggers of `attempt` due at the start of `step` (on rank `only_rank`, if set)."""
    if attempt.get("only_rank", rank) != rank:
        return
    if attempt.get("signal_at") == step:
        os.kill(os.getpid(), signal.Signals[f"SIG{attempt.get('signal', 'USR1')}"])
    if attempt.get("save_at") == step:
        Path(os.environ["RTOOL_SAVE_SWITCH"]).touch()
        time.sleep(4 * POLL)  # the guard's thread sees it during this step
    if attempt.get("kill_at") == step:
        Path(os.environ["RTOOL_KILL_SWITCH"]).touch()
        time.sleep(4 * POLL)


def peek(attempt: dict[str, Any], step: int, result: dict[str, Any]) -> None:
    """The heartbeat as it is at the start of step `heartbeat_at` (the training going on)."""
    path = os.environ.get("RTOOL_HEARTBEAT")
    if attempt.get("heartbeat_at") == step and path:
        hb = read_heartbeat(path)
        result["heartbeat_mid"] = hb.to_dict() if hb is not None else None


def nan_due(attempt: dict[str, Any], step: int) -> bool:
    return "nan_from" in attempt and step >= attempt["nan_from"]


def record(rank: int, results: list[dict[str, Any]]) -> None:
    hb_path = os.environ.get("RTOOL_HEARTBEAT")
    hb = read_heartbeat(hb_path) if hb_path and rank == 0 else None
    results[-1]["heartbeat"] = hb.to_dict() if hb is not None else None
    (OUT / f"report-{rank}.json").write_text(json.dumps(results))


def prepare(attempt: dict[str, Any]) -> None:
    """Before an attempt: remove the kill switch when asked (the user released the run)."""
    if attempt.get("remove_kill"):
        Path(os.environ["RTOOL_KILL_SWITCH"]).unlink(missing_ok=True)


def break_newest(attempt: dict[str, Any], weights: Path | None, last: Path | None) -> None:
    """Before an attempt: `cut_newest`, the node died in the middle of the newest save (the
    file written `last` is missing, the `weights` file half written); `corrupt_newest`, the
    weights file lost its last bytes (complete by size and files, but it does not load)."""
    if weights is None:
        return
    size = weights.stat().st_size
    if attempt.get("cut_newest"):
        os.truncate(weights, size // 3)
        if last is not None:
            last.unlink()
    elif attempt.get("corrupt_newest"):
        os.truncate(weights, size - 64)
