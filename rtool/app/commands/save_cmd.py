"""`rtool save`: touch the run's save switch (see docs/submit.md)."""

from __future__ import annotations

import typer

from rtool.app.commands import run_switch
from rtool.app.plumbing.context import get_context
from rtool.slurm_templates.switches import touch_switch


def save(
    ctx: typer.Context,
    name: str | None = run_switch.RUN,
    save_switch: str | None = typer.Option(None, "--save-switch", help="Save switch path."),
) -> int:
    """An unknown run exits 1 and lists the runs rtool knows; nothing is created.

    Example: rtool save --run llama-7b
    """
    app_ctx = get_context(ctx)
    shared = app_ctx.config.switches.group_writable
    path = touch_switch(run_switch.switch(app_ctx, name, save_switch, "save"), shared)
    typer.echo(f"save switch {path} is set (the shim removes it after the save)")
    return 0


def register(cli: typer.Typer) -> None:
    cli.command("save")(save)
