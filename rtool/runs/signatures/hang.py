"""hang: rtool's shim ended a rank that made no step for `hang_after` (its own hang)."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="hang",
    label="hang (no step)",
    pattern=r"^rtool\.shim: (?:HUNG at step \d{1,12}|hung): no step for ",
    tier=ROOT,
    action="this rank stopped making steps: its stacks follow the line in the log (a deadlock, "
    "a stuck read, a collective the other ranks never joined)",
    why="the hung rank's own shim prints it; a hang is the training's or the filesystem's",
    examples=(  # as the shim prints them (tests/e2e/test_rootcause_multinode.py)
        "rtool.shim: HUNG at step 20: no step for 4.0s after step 20 (hang_after 4s); the stacks "
        "of all threads:",
        "rtool.shim: hung: no step for 4.0s after step 20 (hang_after 4s); exit code 89",
    ),
    near_misses=(
        "rtool.shim: PEER_FAILED at step 20: rank 1 on n2 hung: no step for 4.0s after step 20 "
        "(hang_after 4s); this rank ended with it; the stacks of all threads:",
        "# rtool.shim: HUNG at step N means the rank hung",
    ),
)
