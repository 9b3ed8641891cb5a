"""The rules a training job's options obey beyond their own format (rtool/slurm_templates/
specs.py): the signal against the time limit, spare nodes, the dependency, the shim's
exit-before-end, the declared extras. Each raises SpecError with one line, or returns the
value as the job keeps it.
"""

from __future__ import annotations

import dataclasses
import re

from rtool.core.units import UnitError, parse_duration
from rtool.slurm_templates import specs
from rtool.slurm_templates.renderer import ShellCode

_ENV_NAME = re.compile(r"^RTOOL_[A-Z0-9_]+$")
_DEPENDENCIES = ("afterany", "afterok", "afternotok", "after", "singleton")


def more_env(
    more_sbatch: list[tuple[str, str | None]], more_env: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The declared `#SBATCH` values are plain text, the declared variables `RTOOL_NAME`."""
    for _, value in more_sbatch:
        if value is not None:
            specs.check_text(value, "sbatch value")
    for name, _ in more_env:
        if not _ENV_NAME.match(name):
            raise specs.SpecError(f"variable name {name!r}: expected RTOOL_NAME")
    return [(ShellCode(name), value) for name, value in more_env]


def dependency(value: str) -> None:
    kind, _, job_id = value.partition(":")
    if kind not in _DEPENDENCIES:
        raise specs.SpecError(f"dependency {value!r}: unknown kind {kind!r}")
    if job_id:
        specs.validate_job_id(job_id)


def exit_before_end(value: str) -> str:
    """The shim's RTOOL_EXIT_BEFORE_END: `auto`, `off` or a duration (`10m`)."""
    if value in ("auto", "off"):
        return value
    try:
        parse_duration(value)
    except UnitError:
        raise specs.SpecError(
            f"exit-before-end {value!r}: auto, off or a duration like 10m"
        ) from None
    return value


def spares(spare_nodes: int | None, body: str | None, restarts_in_place: int) -> int | None:
    """Spare nodes (None for none): a Python script's, restarted in place."""
    if not spare_nodes:
        return None
    specs.validate_count(spare_nodes, "spare-nodes", 100)
    if body is not None:
        raise specs.SpecError(
            "--spare-nodes needs a Python script: rtool launches it on --nodes of the "
            "allocation (a batch script's own commands choose their nodes themselves)"
        )
    if not restarts_in_place:
        raise specs.SpecError(
            "--spare-nodes needs restarts in place (a failed node is replaced by "
            "restarting the training on a spare): drop --restarts-in-place 0"
        )
    return spare_nodes


def signal(
    spec: specs.SignalSpec | None, time: str | None, notes: list[str]
) -> specs.SignalSpec | None:
    """The signal as sent to the batch shell (`B:`; said in `notes` when it was not), its lead
    shorter than the time limit."""
    if spec is not None and not spec.batch:
        given = spec.sbatch()
        spec = dataclasses.replace(spec, batch=True)
        notes.append(
            f"--signal {given} is sent as {spec.sbatch()}: rtool forwards the signal "
            "from the batch shell to the processes that handle it (without B: Slurm signals "
            "every process of the job, and a launcher such as torchrun dies of it)"
        )
    if spec is None or not time:
        return spec
    limit = specs.time_seconds(time)
    if limit is not None and spec.lead >= limit:
        fits = specs.default_signal_lead(limit, spec.lead)
        hint = dataclasses.replace(spec, lead=fits).sbatch()
        raise specs.SpecError(
            f"signal lead time {spec.lead}s is not shorter than the time limit "
            f"{time}: the signal would come at the start (e.g. --signal {hint})"
        )
    return spec
