"""rtool.shim: the in-loop guard (kill switch, save switch, signals, time limit, memory, NaN).

    from rtool.shim import Guard

    guard = Guard.from_env(save=save_checkpoint)
    guard.exit_if_killed()
    for step in range(start_step, total_steps):
        loss = train_step()
        if not guard.check_loss(loss):
            continue
        guard.step(step)
    guard.finished()

Modules: guard (the Guard), options (settings and the RTOOL_* environment), monitor (the
polling thread), heartbeat, distributed (agreement across ranks), signals, forced_exit, slurm
(scontrol/scancel from inside a job); integrations/ for Hugging Face and Lightning.
`import rtool.shim` loads only the standard library, psutil and rtool.core.units.
"""

from rtool.shim.guard import (
    NONFINITE_EXIT_CODE,
    REQUEUE_EXIT_CODE,
    SAVE_FAILED_EXIT_CODE,
    SAVE_TIMEOUT_EXIT_CODE,
    Decision,
    Guard,
)
from rtool.shim.options import ShimConfigError

__all__ = [
    "NONFINITE_EXIT_CODE",
    "REQUEUE_EXIT_CODE",
    "SAVE_FAILED_EXIT_CODE",
    "SAVE_TIMEOUT_EXIT_CODE",
    "Decision",
    "Guard",
    "ShimConfigError",
]
