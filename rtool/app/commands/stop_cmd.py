"""`rtool stop`: touch the run's kill switch (see docs/submit.md)."""

from __future__ import annotations

import typer

from rtool.app.commands import run_switch
from rtool.app.plumbing.context import get_context
from rtool.core.errors import UsageError
from rtool.slurm_templates.switches import touch_switch


def stop(
    ctx: typer.Context,
    name: str | None = run_switch.RUN,
    cancel_pending: bool = typer.Option(
        False, "--cancel-pending", help="Also cancel the pending tasks of the array."
    ),
    kill_switch: str | None = typer.Option(None, "--kill-switch", help="Kill switch path."),
) -> int:
    """An unknown run exits 1 and lists the runs rtool knows; nothing is created.

    Example: rtool stop --run llama-7b --cancel-pending
    """
    app_ctx = get_context(ctx)
    if cancel_pending and not name:
        raise UsageError("--cancel-pending needs --run (or --job-name)")
    shared = app_ctx.config.switches.group_writable
    path = touch_switch(run_switch.switch(app_ctx, name, kill_switch, "kill"), shared)
    typer.echo(f"kill switch {path} is set (remove it before the next submission)")
    if cancel_pending and name:
        job_name = run_switch.cancel_pending(app_ctx, name)
        typer.echo(f"cancelled the pending jobs and array tasks named {job_name}")
    return 0


def register(cli: typer.Typer) -> None:
    cli.command("stop")(stop)
