"""hang: rtool's shim ended a rank that made no step for `hang_after` (its own hang)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="hang",
    label="hang (no step)",
    pattern=r"^rtool\.shim: HUNG at step \d{1,12}: no step for ",
    tier=ROOT,
    action="this rank stopped making steps: its stacks follow the line in the log (a deadlock, "
    "a stuck read, a collective the other ranks never joined)",
    why="the hung rank's own shim prints it; a hang is the training's or the filesystem's",
    examples=(
        "rtool.shim: HUNG at step 41: no step for 4.2s after step 41 (hang_after 4s); the stacks "
        "of all threads:",
    ),
    near_misses=(
        "rtool.shim: PEER_FAILED at step 41: rank 0 on n1 hung: no step for 4.2s after step 41 "
        "(hang_after 4s); this rank ended with it; the stacks of all threads:",
        "# rtool.shim: HUNG at step N means the rank hung",
    ),
)
