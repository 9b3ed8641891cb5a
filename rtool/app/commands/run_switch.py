"""The run whose switch `rtool stop` and `rtool save` touch: its --run option and the switch path
(the given one, the one recorded for the run, or a `[switches]` path shared by every run)."""

from __future__ import annotations

from pathlib import Path

import typer

from rtool.app.plumbing.context import AppContext
from rtool.core.errors import RtoolError, UsageError
from rtool.runs import names
from rtool.slurm_templates.submit import switch_path

RUN = typer.Option(
    None,
    "--run",
    "--job-name",
    help="The run, by its run or job name (as given to rtool submit).",
)


def switch(app_ctx: AppContext, name: str | None, given: str | None, which: str) -> str:
    """The switch to touch: the given path, else the one recorded for the run `name` (by run
    or job name), else a `[switches]` path shared by every run. An unknown run, or no name
    where each run has its own switch, is an error that lists the runs rtool knows."""
    if given:
        return switch_path(given, None, which, name or "", Path.cwd())
    if name:
        sub = names.find(app_ctx.state, name)
        if sub is None:
            raise RtoolError(
                f"no run or job named {name!r} was submitted with rtool from this account; "
                f"{names.known(app_ctx.state)} (or give --{which}-switch PATH)"
            )
        return sub.kill_switch if which == "kill" else sub.save_switch
    configured = getattr(app_ctx.config.switches, which)
    if configured and "{run}" not in configured:  # one switch for every run: the config says so
        return switch_path(None, configured, which, "", Path.cwd())
    raise UsageError(
        f"name the run: rtool {'stop' if which == 'kill' else 'save'} --run NAME (each run has "
        f"its own switch); {names.known(app_ctx.state)}"
    )


def cancel_pending(app_ctx: AppContext, name: str) -> str:
    sub = names.find(app_ctx.state, name)
    job_name = sub.job_name if sub is not None else name
    app_ctx.slurm.scancel(name=job_name, states="PENDING")  # yours only
    return job_name
