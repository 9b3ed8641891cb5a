"""slurm-cancelled: Slurm's own line in the log: the job or step was cancelled (scancel)."""

from rtool.runs.signatures.base import SYMPTOM, Declared

SIGNATURE = Declared(
    name="slurm-cancelled",
    label="cancelled (Slurm)",
    pattern=r"\*\*\* (?:JOB|STEP) [\w.]{1,40} ON \S{1,100} CANCELLED AT \S{1,40}(?: DUE TO "
    r"[\w ]{1,40})? \*\*\*",
    tier=SYMPTOM,
    action="someone or something cancelled it (scancel, a limit): see who with "
    "`sacct -j <job> -o JobID,State,Reason`",
    why="Slurm's decision about the job, not the node's hardware",
    examples=(
        "slurmstepd: error: *** JOB 7518 ON xantipa CANCELLED AT 2022-06-10T17:11:35 ***",
        "slurmstepd: error: *** STEP 3495064.0 ON orion-01-01 CANCELLED AT 2021-10-27T19:35:36 ***",
    ),
    near_misses=(
        "# *** JOB CANCELLED *** is printed by slurmstepd",
        "scancel 7518",
    ),
)
