"""What the guard decided at a step, its stop reasons and exit codes (shared by its modules)."""

from __future__ import annotations

from dataclasses import dataclass

REQUEUE_EXIT_CODE = 85
NONFINITE_EXIT_CODE = 86
SAVE_FAILED_EXIT_CODE = 87
SAVE_TIMEOUT_EXIT_CODE = 88
#: The process was ended by the shim as hung (no step for `hang_after`), or because another
#: rank hung or crashed: the batch script restarts it in place (docs/runs.md).
HANG_EXIT_CODE = 89

# Stop / save reasons (Decision.reason, heartbeat stop_reason).
KILLED, SIGNAL, TIME_LIMIT, MEMORY = "killed", "signal", "time_limit", "memory"
GPU_MEMORY, NONFINITE, SAVE_SWITCH = "gpu_memory", "nonfinite_loss", "save_switch"
SAVE_TIMEOUT, UNRESPONSIVE = "save_timeout", "unresponsive"
HUNG, PEER_FAILED = "hung", "peer_failed"
PREEMPTED = "preempted"  # a SIGNAL stop while Slurm preempts the job
PERIODIC = "periodic"  # a save of the save_every cadence (training goes on)


@dataclass(frozen=True)
class Decision:
    """What guard.step() did at this step."""

    saved: bool = False  # save(step) was called and returned
    stopping: bool = False  # training must stop (the guard exits unless exit=False)
    reason: str | None = None  # killed, signal, time_limit, memory, gpu_memory, ...
    save_requested: bool = False  # a save was due (with save=None: the caller must save)
    exit_code: int | None = None  # the code the process exits (or should exit) with
    step: int | None = None
    detail: str | None = None


CONTINUE = Decision()
