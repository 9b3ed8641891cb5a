"""What the Slurm layer (rtool.core.slurm.cmd) raises: one kind per way a command fails."""

from __future__ import annotations

from rtool.core.proc import ProcError


class SlurmError(ProcError):
    """A Slurm command failed (slurmctld down, bad job id, rejected submission...)."""


class SlurmTimeout(SlurmError):
    """A Slurm command did not answer within its timeout."""


class AccountingDisabled(SlurmError):
    """The cluster has no accounting storage: sacct cannot tell how jobs ended."""


class NoFailedNode(SlurmError):
    """This sacct has no FailedNode field (Slurm before 24.11)."""


class ForeignJob(SlurmError):
    """A job that is not the user's own (or whose owner Slurm does not say): rtool never acts
    on it, whoever it runs as (root and Slurm operators included)."""
