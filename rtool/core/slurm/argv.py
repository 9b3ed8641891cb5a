"""The argv of Slurm commands rtool builds (every value validated) and which of them only
read (`--dry-run` runs those alone)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rtool.core import validate as v
from rtool.core.slurm.parse import SQUEUE_FORMAT


def reads_only(argv: Sequence[str]) -> bool:
    """Whether a Slurm command only reads: squeue, sacct, sinfo, `scontrol show|ping`,
    `scrontab -l`."""
    tool, args = (argv[0], list(argv[1:])) if argv else ("", [])
    if tool in ("squeue", "sacct", "sinfo"):
        return True
    if tool == "scontrol":
        return bool(args) and args[0] in ("show", "ping")
    return tool == "scrontab" and args == ["-l"]


def squeue_argv(
    states: str,
    users: list[str],
    names: Iterable[str] | None,
    partition: str | None,
    job_ids: list[str] | None,
) -> list[str]:
    """squeue's argv: every value validated (rtool.core.validate)."""
    argv = ["squeue", "-h", "-o", SQUEUE_FORMAT, f"--states={v.states(states)}"]
    if users:
        argv.append("--user=" + ",".join(dict.fromkeys(users)))
    name_list = [v.name(n, "job name") for n in names or []]
    if name_list:
        argv.append("--name=" + ",".join(name_list))
    if partition:
        argv.append(f"--partition={v.words(partition, 'partition')}")
    if job_ids:
        argv.append("--jobs=" + ",".join(job_ids))
    return argv
