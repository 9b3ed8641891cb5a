"""`rtool nodes [--json]`, `rtool nodes forget NODE` (see docs/nodes.md)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import typer

from rtool.app.plumbing import errors
from rtool.app.plumbing.context import get_context
from rtool.core import validate
from rtool.core.errors import RtoolError, UsageError
from rtool.core.units import format_when
from rtool.nodes.blame import record_node_fails
from rtool.nodes.store import SuspectStore

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext

app = typer.Typer(
    cls=errors.PolicyGroup,
    help="Examples:\n\n"
    "  rtool nodes                 # the suspects, with their evidence\n\n"
    "  rtool nodes --json\n\n"
    "  rtool nodes forget gpu017   # clear a node by hand",
    invoke_without_command=True,
)


def store_of(app_ctx: AppContext) -> SuspectStore:
    return SuspectStore(app_ctx.state, app_ctx.config.nodes.expiry)


@app.callback()
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    refresh: bool = typer.Option(
        True, "--refresh/--no-refresh", help="First look for new NODE_FAIL attempts in sacct."
    ),
) -> int:
    """List suspect nodes: why, since when, which runs they hurt, when suspicion expires."""
    if ctx.invoked_subcommand is not None:
        return 0

    app_ctx = get_context(ctx)
    store = store_of(app_ctx)
    note = None
    try:  # the NODE_FAIL attempts sacct knows of (your jobs, within the expiry)
        if refresh:
            record_node_fails(app_ctx.slurm, store, names=None, window=app_ctx.config.nodes.expiry)
    except (RtoolError, OSError) as exc:
        note = f"could not read sacct: {exc}"
    now = time.time()
    suspects = store.suspects(now)
    expiry = app_ctx.config.nodes.expiry
    if as_json:
        data = {"suspects": [s.to_json(expiry) for s in suspects], "refresh_error": note}
        typer.echo(json.dumps(data, indent=1, sort_keys=True))
        raise typer.Exit(0)
    if note:
        typer.echo(f"rtool: warning: {note}", err=True)
    if not suspects:
        typer.echo("no suspect nodes")
        raise typer.Exit(0)
    for s in suspects:
        runs = ", ".join(s.runs) or "-"
        typer.echo(f"{s.node}  suspect since {format_when(s.since, now)}  runs: {runs}")
        typer.echo(f"  expires {format_when(s.expires(expiry), now)}")
        for e in sorted(s.evidence, key=lambda e: e.time):
            job = f" job {e.job_id}" if e.job_id else ""
            typer.echo(f"  {format_when(e.time, now)}  {e.kind.value}{job}: {e.detail}")
            for line in e.output.splitlines()[-5:]:
                typer.echo(f"      | {line}")
    raise typer.Exit(0)


@app.command("forget")
def forget(ctx: typer.Context, node: str = typer.Argument(..., help="The node to clear.")) -> int:
    """Clear a suspect node by hand (its old evidence is not taken again).

    Example: rtool nodes forget gpu017
    """
    try:
        validate.node(node)
    except validate.ArgvError as exc:
        raise UsageError(str(exc)) from None
    if store_of(get_context(ctx)).forget(node):
        typer.echo(f"{node} is no longer suspect")
    else:
        typer.echo(f"{node} was not suspect")
    return 0
