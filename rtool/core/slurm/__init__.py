"""rtool's Slurm layer: pure parsers (`parse`) and the command wrapper (`cmd`)."""

from rtool.core.slurm.cmd import AccountingDisabled, Slurm, SlurmError, SlurmTimeout
from rtool.core.slurm.parse import (
    ACTIVE_STATES,
    QUEUED_STATES,
    RUNNING_STATES,
    ParseError,
    SqueueJob,
    SubmitResult,
    expand_hostlist,
    format_slurm_duration,
    parse_scontrol_show_job,
    parse_slurm_duration,
    parse_slurm_timestamp,
    parse_squeue,
)
from rtool.core.slurm.sacct import SacctRecord, parse_sacct

__all__ = [
    "ACTIVE_STATES",
    "QUEUED_STATES",
    "RUNNING_STATES",
    "AccountingDisabled",
    "ParseError",
    "SacctRecord",
    "Slurm",
    "SlurmError",
    "SlurmTimeout",
    "SqueueJob",
    "SubmitResult",
    "expand_hostlist",
    "format_slurm_duration",
    "parse_sacct",
    "parse_scontrol_show_job",
    "parse_slurm_duration",
    "parse_slurm_timestamp",
    "parse_squeue",
]
