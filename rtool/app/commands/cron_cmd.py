"""`rtool cron init|start|stop|status|list|run|install|uninstall|tick`: the Slurm crontab
emulator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from rtool.app.plumbing import errors
from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.fromspec import default_note
from rtool.core.errors import UsageError
from rtool.core.redact import redact_data
from rtool.cron import manage
from rtool.cron.listing import chains, render
from rtool.cron.scron import Backend
from rtool.cron.store import dir_problem, resolve_dir
from rtool.cron.tick import TickEnv, tick

app = typer.Typer(
    cls=errors.PolicyGroup,
    help="Example: rtool cron init ~/rtool-cron && rtool cron start",
    no_args_is_help=True,
)

#: The latest slot accepted (9999-12-31): a larger one is no time at all.
MAX_SLOT = 253402300799.0
_DIR_HELP = f"The cron folder {default_note('cron.dir')}."
_DIR = typer.Option(None, "--dir", help=_DIR_HELP, show_default=False)


def _env(ctx: typer.Context, directory: Path | None) -> TickEnv:
    app_ctx = get_context(ctx)
    cfg = app_ctx.config
    files = tuple(f.resolve() for f in app_ctx.config_files)
    root = resolve_dir(directory if directory is not None else cfg.cron.dir)
    problem = dir_problem(root)
    if problem:
        raise UsageError(problem)
    return TickEnv(cfg, app_ctx.state, app_ctx.slurm, root, files)


@app.command("init")
def init_cmd(
    ctx: typer.Context,
    directory: Path | None = typer.Argument(None, help=_DIR_HELP, show_default=False),
) -> int:
    """Create the cron folder: cron.hourly/, cron.daily/, cron.weekly/, cron.d/, logs/, with
    disabled example jobs.

    Example: rtool cron init ~/rtool-cron
    """
    env = _env(ctx, directory)
    created = manage.init(env.root)
    for item in created:
        typer.echo(f"created {item}")
    if not created:
        typer.echo(f"{env.root} is already set up")
    typer.echo(f"next: drop jobs into {env.root}/cron.hourly/ ..., then run: rtool cron start")
    return 0


@app.command("start")
def start_cmd(ctx: typer.Context, directory: Path | None = _DIR) -> int:
    """Submit the scheduler chain (its first tick at the next slot). Does nothing when a chain
    already runs for this user and folder.

    Example: rtool cron start --dir ~/rtool-cron
    """
    typer.echo(manage.start(_env(ctx, directory)))
    return 0


@app.command("stop")
def stop_cmd(ctx: typer.Context, directory: Path | None = _DIR) -> int:
    """Cancel the scheduler chain of this folder.

    Example: rtool cron stop --dir ~/rtool-cron
    """
    typer.echo(manage.stop(_env(ctx, directory)))
    return 0


@app.command("status")
def status_cmd(ctx: typer.Context, directory: Path | None = _DIR) -> int:
    """Show the chain's Slurm jobs, the last and next tick, and each job's last start,
    duration, exit code and log file.

    Example: rtool cron status
    """
    for line in manage.status(_env(ctx, directory)):
        typer.echo(line)
    return 0


@app.command("list")
def list_cmd(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="JSON output.")
) -> int:
    """List your cron chains: folder, backend (jobs or scrontab), state (running, queued,
    stopped, dead), last and next tick, and each slot's period and last run.

    Example: rtool cron list --json
    """
    app_ctx = get_context(ctx)
    found, error = chains(app_ctx.state, app_ctx.slurm)
    if as_json:
        doc = {"chains": [c.to_json() for c in found], "squeue_error": error}
        typer.echo(json.dumps(redact_data(doc), indent=2))
        return 0
    for line in render(found, error):
        typer.echo(line)
    return 0


@app.command("run")
def run_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Job name: cron.hourly/check.sh, check.sh, cron.d/f:3."),
    directory: Path | None = _DIR,
) -> int:
    """Run one job now (a *.slurm file is submitted). Exit 1 when it fails.

    Example: rtool cron run cron.hourly/check-disk.sh
    """
    result = manage.run_one(_env(ctx, directory), name)
    typer.echo(f"{result.name}: {result.message or result.status}")
    if result.log:
        typer.echo(f"log: {result.log}")
    return 1 if result.failed else 0


@app.command("install")
def install_cmd(
    ctx: typer.Context,
    directory: Path | None = _DIR,
    backend: str = typer.Option(
        "auto",
        "--backend",
        help="scrontab (the user's Slurm crontab, where ScronParameters=enable), jobs (the "
        "self-perpetuating scheduler job) or auto (scrontab where the cluster allows it).",
    ),
) -> int:
    """Install the ticks: in your scrontab where the cluster allows it, else as the
    self-perpetuating chain of jobs (like `rtool cron start`). Run it again to switch.

    Example: rtool cron install --dir ~/rtool-cron --backend auto
    """
    try:
        chosen = Backend(backend)
    except ValueError:
        raise UsageError(f"--backend: {backend!r} is not scrontab, jobs or auto") from None
    for line in manage.install(_env(ctx, directory), chosen):
        typer.echo(line)
    return 0


@app.command("uninstall")
def uninstall_cmd(ctx: typer.Context, directory: Path | None = _DIR) -> int:
    """Remove the folder's scrontab entry and cancel its scheduler jobs.

    Example: rtool cron uninstall --dir ~/rtool-cron
    """
    for line in manage.uninstall(_env(ctx, directory)):
        typer.echo(line)
    return 0


@app.command("tick")
def tick_cmd(
    ctx: typer.Context,
    directory: Path | None = _DIR,
    slot: float | None = typer.Option(
        None,
        "--slot",
        help="The slot (epoch seconds) this tick was queued for.",
        show_default=False,
    ),
    no_chain: bool = typer.Option(
        False, "--no-chain", help="Queue no next tick (Slurm starts them: the scrontab backend)."
    ),
) -> int:
    """One scheduler tick: queue the next tick, run what is due, write the heartbeat. This is
    what the chain's Slurm job runs; run it by hand only to debug.

    Example: rtool cron tick --dir ~/rtool-cron
    """
    if slot is not None and not (math.isfinite(slot) and 0 < slot < MAX_SLOT):
        raise UsageError(f"--slot {slot!r}: expected a time in epoch seconds, e.g. 1767225600")
    env = _env(ctx, directory)
    env.chain = not no_chain
    manage.require_layout(env.root)
    report = tick(env, slot)
    for r in report.results:
        typer.echo(f"{r.name}: {r.message or r.status}")
    if report.queue_error:
        typer.echo(f"rtool: cannot queue the next tick: {report.queue_error}", err=True)
        return 1
    return 0  # failed jobs are reported through notify, not by failing the chain's job
