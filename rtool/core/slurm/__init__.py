"""rtool's Slurm layer: pure parsers (`parse`) and the command wrapper (`cmd`)."""

from rtool.core.slurm.cmd import Slurm, SlurmError, SlurmTimeout
from rtool.core.slurm.parse import (
    ACTIVE_STATES,
    QUEUED_STATES,
    RUNNING_STATES,
    ParseError,
    SqueueJob,
    SubmitResult,
    format_slurm_duration,
    parse_scontrol_show_job,
    parse_slurm_duration,
    parse_slurm_timestamp,
    parse_squeue,
)

__all__ = [
    "ACTIVE_STATES",
    "QUEUED_STATES",
    "RUNNING_STATES",
    "ParseError",
    "Slurm",
    "SlurmError",
    "SlurmTimeout",
    "SqueueJob",
    "SubmitResult",
    "format_slurm_duration",
    "parse_scontrol_show_job",
    "parse_slurm_duration",
    "parse_slurm_timestamp",
    "parse_squeue",
]
