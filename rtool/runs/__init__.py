"""The run view: a training run followed across its Slurm attempts.

A run (named by `rtool submit --run NAME`, exported as `$RTOOL_RUN`) outlives its jobs: array
tasks, requeues and chained jobs are its attempts. This package builds the attempt ledger
(`ledger`) from accounting (`sacct`) or, without it, from the batch script's own records,
heartbeats and squeue observations (`sources`), names why each attempt died (`signatures`),
and sums a run up (`totals`). Floor 1: it stands on the core alone (docs/architecture.md).
"""
