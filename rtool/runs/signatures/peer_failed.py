"""peer-failed: rtool's shim ended a rank because another rank of the launch failed first."""

from rtool.runs.signatures.base import SYMPTOM, Declared

SIGNATURE = Declared(
    name="peer-failed",
    label="ended with a failed rank",
    pattern=r"^rtool\.shim: (?:PEER_FAILED at step \d{1,12}|peer_failed): ",
    tier=SYMPTOM,
    action="another rank failed first (its line names it): that rank's failure is the cause",
    why="the ranks left behind print it, not the one that failed",
    examples=(  # as the shim prints them (tests/e2e/test_rootcause_multinode.py)
        "rtool.shim: PEER_FAILED at step 21: rank 1 on n2 crashed: RuntimeError: rank 1 crashed "
        "on demand at step 22; this rank ended with it; the stacks of all threads:",
        "rtool.shim: peer_failed: rank 1 on n2 hung: no step for 4.0s after step 20 (hang_after "
        "4s); this rank ended with it; exit code 89",
    ),
    near_misses=(
        "rtool.shim: HUNG at step 20: no step for 4.0s after step 20 (hang_after 4s); the stacks "
        "of all threads:",
        "# PEER_FAILED: another rank failed",
    ),
)
