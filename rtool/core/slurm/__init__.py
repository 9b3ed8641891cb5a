"""rtool's Slurm layer: pure parsers (`parse`) and the command wrapper (`cmd`)."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: name -> the submodule that defines it (imported on first use: a light package import).
_WHERE = {
    "AccountingDisabled": "rtool.core.slurm.cmd",
    "ForeignJob": "rtool.core.slurm.cmd",
    "NoFailedNode": "rtool.core.slurm.cmd",
    "Slurm": "rtool.core.slurm.cmd",
    "SlurmError": "rtool.core.slurm.cmd",
    "SlurmTimeout": "rtool.core.slurm.cmd",
    "ACTIVE_STATES": "rtool.core.slurm.parse",
    "QUEUED_STATES": "rtool.core.slurm.parse",
    "RUNNING_STATES": "rtool.core.slurm.parse",
    "ParseError": "rtool.core.slurm.parse",
    "SqueueJob": "rtool.core.slurm.parse",
    "SubmitResult": "rtool.core.slurm.parse",
    "compress_hostlist": "rtool.core.slurm.hostlist",
    "expand_hostlist": "rtool.core.slurm.parse",
    "format_slurm_duration": "rtool.core.slurm.parse",
    "parse_scontrol_show_job": "rtool.core.slurm.parse",
    "parse_slurm_duration": "rtool.core.slurm.parse",
    "parse_slurm_timestamp": "rtool.core.slurm.parse",
    "parse_squeue": "rtool.core.slurm.parse",
    "SacctRecord": "rtool.core.slurm.sacct",
    "parse_sacct": "rtool.core.slurm.sacct",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
