"""slurm-preempted: Slurm's own line in the log: it cancelled the job or step DUE TO PREEMPTION."""

from rtool.runs.signatures.base import SYMPTOM, Declared

SIGNATURE = Declared(
    name="slurm-preempted",
    label="preempted (Slurm)",
    pattern=r"\*\*\* (?:JOB|STEP) [\w.]{1,40} (?:ON \S{1,100} )?CANCELLED AT \S{1,40} DUE TO "
    r"PREEMPTION\b",
    tier=SYMPTOM,
    action="a higher-priority job took the nodes: it resumes from its last checkpoint when "
    "requeued",
    why="Slurm's decision about the job; hardware evidence comes from NODE_FAIL, not this line",
    examples=(
        "slurmstepd: error: *** JOB 32391783 ON cn119 CANCELLED AT 2021-06-18T13:05:36 DUE TO "
        "PREEMPTION ***",
    ),
    near_misses=(
        "# *** JOB CANCELLED DUE TO PREEMPTION *** is printed by slurmstepd",
        "#SBATCH --time=13-24:00:00 # days-hh:mm:ss",
    ),
)
