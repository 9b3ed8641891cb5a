"""rtool's Slurm layer: pure parsers (`parse`) and the command wrapper (`cmd`).

Importing it loads both; neither `rtool --help` nor `rtool watch disk` imports it
(bench/cli_startup.py).
"""

from rtool.core.slurm.cmd import (
    AccountingDisabled,
    ForeignJob,
    NoFailedNode,
    Slurm,
    SlurmError,
    SlurmTimeout,
)
from rtool.core.slurm.hostlist import compress_hostlist
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
    "ForeignJob",
    "NoFailedNode",
    "ParseError",
    "SacctRecord",
    "Slurm",
    "SlurmError",
    "SlurmTimeout",
    "SqueueJob",
    "SubmitResult",
    "compress_hostlist",
    "expand_hostlist",
    "format_slurm_duration",
    "parse_sacct",
    "parse_scontrol_show_job",
    "parse_slurm_duration",
    "parse_slurm_timestamp",
    "parse_squeue",
]
