"""bus-error: the process died on SIGBUS (most often /dev/shm too small for the data loader)."""

from rtool.runs.signatures.base import SECONDARY, Declared

SIGNATURE = Declared(
    name="bus-error",
    label="bus error (SIGBUS)",
    pattern=r"\bBus error\b|Signal 7 \(SIGBUS\)|\(exitcode: -7\)|exitcode {0,4}: -7 \(pid"
    r"|Unexpected bus error encountered in worker",
    tier=SECONDARY,
    action="most often shared memory (/dev/shm) is too small for the data loader's workers: "
    "fewer workers, or a larger /dev/shm",
    why="shared memory or a mapped file, not the node's hardware",
    examples=(
        "srun: error: Orion-18-69: task 289: Bus error",
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).",
        "  traceback : Signal 7 (SIGBUS) received by PID 467398",
        "RuntimeError: DataLoader worker (pid 30882) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory. Please try to raise your "
        "shared memory limit.",
    ),
    near_misses=(
        "# bus errors come from /dev/shm",
        "signal.signal(signal.SIGBUS, handler)",
    ),
)
