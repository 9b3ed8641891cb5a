"""slurm-time-limit: Slurm's own line in the log: it cancelled the job or step DUE TO TIME LIMIT."""

from rtool.runs.signatures.base import SYMPTOM, Declared

SIGNATURE = Declared(
    name="slurm-time-limit",
    label="time limit (Slurm)",
    pattern=r"\*\*\* (?:JOB|STEP) [\w.]{1,40} (?:ON \S{1,100} )?CANCELLED AT \S{1,40} DUE TO "
    r"TIME LIMIT\b",
    tier=SYMPTOM,
    action="the attempt ran out of its --time: it resumes from its last checkpoint if the run "
    "requeues; save more often or ask for more time",
    why="Slurm's decision about the job; hardware evidence comes from NODE_FAIL, not this line",
    examples=(
        "slurmstepd: error: *** JOB 4191701 ON c5-1 CANCELLED AT 2021-08-17T15:09:00 DUE TO TIME "
        "LIMIT ***",
        "slurmstepd: error: *** STEP 494583.0 ON ... CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME "
        "LIMIT ***",
    ),
    near_misses=(
        "# *** JOB CANCELLED DUE TO TIME LIMIT *** is printed by slurmstepd",
        "#SBATCH --time=13-24:00:00 # days-hh:mm:ss",
    ),
)
