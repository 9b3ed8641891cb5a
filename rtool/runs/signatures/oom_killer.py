"""oom-killer: the kernel or Slurm's cgroup killed the job's processes for using too much memory."""

from rtool.runs.signatures.base import Declared

SIGNATURE = Declared(
    name="oom-killer",
    label="killed by the OOM killer",
    pattern=r"Detected \d{1,9} oom[-_]kill event|Some of (?:the )?step tasks have been OOM Killed"
    r"|[Oo]ut of memory: Kill(?:ed)? process \d",
    examples=(
        "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.batch. Some of the step "
        "tasks have been OOM Killed.",
        "slurmstepd: error: Detected 2 oom-kill event(s) in step 1234.0 cgroup. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.",
        "Out of memory: Killed process 4242 (python) total-vm:98765432kB, anon-rss:87654321kB",
        "Memory cgroup out of memory: Killed process 4242 (python) total-vm:1234kB",
    ),
    near_misses=(
        "# the oom-kill score of the loader is raised so the trainer survives",
        "echo 1000 > /proc/self/oom_score_adj",
        'print("out of memory? try a smaller batch")',
    ),
)
