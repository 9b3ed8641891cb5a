"""`rtool record start|end [--rc N]`: the attempt record, written by the batch script.

Hidden: the rtool prelude of `rtool submit`'s batch script runs it (bounded by `timeout`, its
failure never stops the training). It reads no config; see `rtool.runs.attempt_record_writer`.
"""

from __future__ import annotations

import typer

from rtool.core.errors import UsageError
from rtool.runs import attempt_record_writer


def record(
    event: str = typer.Argument(..., help="start or end."),
    rc: int | None = typer.Option(None, "--rc", help="The training's exit code (end)."),
) -> int:
    """Every field comes from Slurm's environment (checked), this clock, the exit code given and,
    at the end, this attempt's own heartbeat. Exit 0 when written (or when the job keeps no
    records), 1 when it could not be written, 2 on bad input.

    Example: rtool record end --rc "$rc"
    """
    if event not in ("start", "end"):
        raise UsageError(f"record: event {event!r}: expected start or end")
    if rc is not None and not 0 <= rc <= 255:
        raise UsageError(f"record: --rc {rc}: expected an exit code 0..255")
    if event == "start" and rc is not None:
        raise UsageError("record: --rc is for the end record")
    attempt_record_writer.write(event, rc)
    return 0


def register(cli: typer.Typer) -> None:
    cli.command("record", hidden=True)(record)
