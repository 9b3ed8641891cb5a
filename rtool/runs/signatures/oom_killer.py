"""oom-killer: the kernel or Slurm's cgroup killed the job's processes for using host memory."""

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="oom-killer",
    label="killed for host memory (OOM killer)",
    pattern=r"Detected \d{1,9} oom[-_]kill event|Some of (?:the )?step tasks have been OOM Killed"
    r"|[Oo]ut of memory: Kill(?:ed)? process \d|: task \d{1,6}: Out Of Memory\b"
    r"|exceeded memory limit \(\d|Exceeded job memory limit|is killed by signal: Killed\."
    r"|failed \(exitcode: -9\)|^Killed$|: line \d{1,6}: {1,8}\d{1,9} Killed {1,40}\S",
    tier=ROOT,
    action="the job ran out of host memory: ask for more (--mem) or use less (fewer loader "
    "workers, smaller prefetch)",
    why="the job's memory use, not the node's hardware",
    examples=(
        "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.batch. Some of the step "
        "tasks have been OOM Killed.",
        "srun: error: node107: task 0: Out Of Memory",
        "slurmstepd: error: Job 7518 exceeded memory limit (626359956 > 512000000), being killed",
        "RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.",
        "Killed",
        "Out of memory: Killed process 4242 (python) total-vm:98765432kB, anon-rss:87654321kB",
    ),
    near_misses=(
        "# the oom-kill score of the loader is raised so the trainer survives",
        "echo 1000 > /proc/self/oom_score_adj",
        'print("out of memory? try a smaller batch")',
        "[Thread 0x7ffe371be700 (LWP 5137) exited]",
        "Killed 3 zombie workers",
    ),
)
