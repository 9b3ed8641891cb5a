"""The preemption drill: stop a running attempt the way Slurm would, and check the stop path.

`rtool drill RUN` sends the run's `--signal` to its running job as Slurm does before the time
limit (`B:` to the batch shell, else to the job steps), then checks, from the shim's heartbeat,
the batch script's records and Slurm, that the training saved and exited within the lead
time with the stop code, that a next attempt was queued, and that it resumed at the saved step
+ 1. A step that broke is named with what to change (docs/drill.md).

    script.py     what the job's batch script sets up (pure)
    find.py       which attempt, and its stop path (squeue, scontrol)
    drive.py      the drill itself (the signal, bounded waits)
    verdict.py    the verdict per step (pure)
    throwaway.py  the short job of `rtool drill --submit`
"""
