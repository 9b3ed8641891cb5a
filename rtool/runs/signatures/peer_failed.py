"""peer-failed: rtool's shim ended a rank because another rank of the launch failed first."""

from rtool.runs.signatures.base import SYMPTOM, Declared

SIGNATURE = Declared(
    name="peer-failed",
    label="ended with a failed rank",
    pattern=r"^rtool\.shim: PEER_FAILED at step \d{1,12}: ",
    tier=SYMPTOM,
    action="another rank failed first (its line names it): that rank's failure is the cause",
    why="the ranks left behind print it, not the one that failed",
    examples=(
        "rtool.shim: PEER_FAILED at step 41: rank 0 on n1 hung: no step for 4.2s after step 41 "
        "(hang_after 4s); this rank ended with it; the stacks of all threads:",
    ),
    near_misses=(
        "rtool.shim: HUNG at step 41: no step for 4.2s after step 41 (hang_after 4s); the stacks "
        "of all threads:",
        "# PEER_FAILED: another rank failed",
    ),
)
