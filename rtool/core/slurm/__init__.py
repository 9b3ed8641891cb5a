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
    expand_hostlist,
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
    "compress_hostlist",
    "expand_hostlist",
    "parse_sacct",
    "parse_slurm_timestamp",
    "parse_squeue",
]
