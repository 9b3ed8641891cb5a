"""rtool.shim: the in-loop guard (kill switch, save switch, signals, time limit, memory, NaN).

    from rtool.shim import Guard

    guard = Guard.from_env(save=save_checkpoint)  # reads the RTOOL_* variables (options.py)
    guard.exit_if_killed()                        # kill switch present: exit 0 before training
    for step in range(start_step, total_steps):
        loss = train_step()
        if not guard.check_loss(loss):            # non-finite: skip the optimizer step
            continue
        guard.step(step)                          # may call save_checkpoint(step), then exit
    guard.finished()                              # done marker, cancel the array's pending tasks

    sys.exit(guard.exit_code)                     # with exit=False: the code the guard decided

Modules: guard (the Guard, its parts built in one place), state (the records they share;
Decision, exit codes), options (GuardOptions, the RTOOL_* environment), monitor (the polling
thread), deadline (when to stop before the job's end), watch and hang (unresponsive after TERM,
hung, another rank failed; a save that does not return in time), stopping (save, stop, hold at
a step boundary), report and heartbeat_writer (the heartbeat, uncaught exceptions), distributed
(agreement across ranks), signals, slurm (scontrol/scancel from inside a job), checkpoints
(`latest_checkpoint`); integrations/ for Hugging Face and Lightning. `import rtool.shim` loads
only the standard library, psutil and stdlib-only rtool.core modules (units, heartbeat).
"""

from rtool.shim.checkpoints import latest_checkpoint
from rtool.shim.guard import Guard
from rtool.shim.options import GuardOptions, ShimConfigError
from rtool.shim.state import (
    HANG_EXIT_CODE,
    NONFINITE_EXIT_CODE,
    REQUEUE_EXIT_CODE,
    SAVE_FAILED_EXIT_CODE,
    SAVE_TIMEOUT_EXIT_CODE,
    Decision,
)

__all__ = [
    "HANG_EXIT_CODE",
    "NONFINITE_EXIT_CODE",
    "REQUEUE_EXIT_CODE",
    "SAVE_FAILED_EXIT_CODE",
    "SAVE_TIMEOUT_EXIT_CODE",
    "Decision",
    "Guard",
    "GuardOptions",
    "ShimConfigError",
    "latest_checkpoint",
]
