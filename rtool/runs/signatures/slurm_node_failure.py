"""slurm-node-failure: Slurm cancelled the job or step DUE TO NODE FAILURE."""

from rtool.runs.signatures.base import SECONDARY, Declared

SIGNATURE = Declared(
    name="slurm-node-failure",
    label="node failure (Slurm)",
    pattern=r"\*\*\* (?:JOB|STEP) [\w.]{1,40} (?:ON \S{1,100} )?CANCELLED AT \S{1,40} DUE TO "
    r"NODE FAILURE\b",
    tier=SECONDARY,
    action="Slurm lost a node of the job: the node NODE_FAIL names is suspect (rtool nodes)",
    why="Slurm's decision about the job; hardware evidence comes from NODE_FAIL, not this line",
    examples=(
        "slurmstepd: error: *** STEP 7871129.0 ON nid001520 CANCELLED AT 2024-10-23T20:04:10 DUE "
        "TO NODE FAILURE ***",
    ),
    near_misses=(
        "# *** JOB CANCELLED DUE TO NODE FAILURE *** is printed by slurmstepd",
        "#SBATCH --time=13-24:00:00 # days-hh:mm:ss",
    ),
)
