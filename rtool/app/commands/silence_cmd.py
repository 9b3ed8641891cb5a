"""`rtool silence add|list|remove`: hold matching alerts during maintenance (like Alertmanager)."""

from __future__ import annotations

import json
import time

import typer

from rtool.app.plumbing import errors
from rtool.app.plumbing.context import get_context
from rtool.core.errors import UsageError
from rtool.core.units import UnitError, format_when, parse_duration
from rtool.notify.deliver import flush
from rtool.notify.engine import queue
from rtool.notify.silence_store import Silences, parse_matcher

app = typer.Typer(
    cls=errors.PolicyGroup,
    help="Alerts matching a silence are held (not lost) while it is in force; when it ends, one "
    "summary goes to the channels they would have reached, and what is still open alerts "
    "again. Resolved notices still close alerts that went out before.\n\n"
    "Matchers: name=value, name!=value, name=~regex, name!~regex on the labels key, check, "
    "what, status, host and the alert's fields; a bare pattern is a glob on the key.\n\n"
    "Examples:\n\n"
    "  rtool silence add 'disk:/scratch*' --for 2h --reason 'Lustre maintenance'\n\n"
    "  rtool silence add check=log host=node17 --for 30m\n\n"
    "  rtool silence list\n\n"
    "  rtool silence remove 3f9c2a1b",
    no_args_is_help=True,
)


@app.command("add")
def add_cmd(
    ctx: typer.Context,
    match: list[str] = typer.Argument(..., help="Matchers (all must match) or a key glob."),
    duration: str = typer.Option(..., "--for", help="How long: 30m, 2h, 1d."),
    reason: str = typer.Option("", "--reason", help="Why (shown in list and in the summary)."),
) -> int:
    """Silence matching alerts from now on for --for; prints the silence id.

    Example: rtool silence add check=disk 'what=~/scratch.*' --for 2h --reason maintenance
    """
    try:
        seconds = parse_duration(duration)
    except UnitError as exc:
        raise UsageError(f"--for: {exc}") from None
    matchers = [parse_matcher(m) for m in match]
    now = time.time()
    s = Silences(get_context(ctx).state).add(matchers, seconds, reason, now)
    typer.echo(f"silence {s.id} ({s.describe()}) until {format_when(s.ends, now)}")
    return 0


@app.command("list")
def list_cmd(
    ctx: typer.Context,
    show_all: bool = typer.Option(False, "--all", help="Also the ones that ended."),
    as_json: bool = typer.Option(False, "--json", help="JSON output."),
) -> int:
    """The silences in force (and pending ones), with how many notifications each holds.

    Example: rtool silence list --all
    """
    now = time.time()
    rows = [s for s in Silences(get_context(ctx).state).load() if show_all or not s.summarized]
    if as_json:
        docs = [{**s.to_dict(), "held": len(s.held) + s.dropped} for s in rows]
        typer.echo(json.dumps(docs, indent=2))
        return 0
    if not rows:
        typer.echo("no silences")
        return 0
    for s in rows:
        state = "active" if s.active(now) else ("pending" if s.starts > now else "ended")
        typer.echo(f"{s.id}  {state}  {s.describe()}")
        typer.echo(f"    from {format_when(s.starts, now)} until {format_when(s.ends, now)}")
        by = f" by {s.created_by}" if s.created_by else ""
        why = f": {s.reason}" if s.reason else ""
        typer.echo(f"    holds {len(s.held) + s.dropped} notification(s); created{by}{why}")
    return 0


@app.command("remove")
def remove_cmd(
    ctx: typer.Context,
    ident: str = typer.Argument(..., help="The silence id (or a unique prefix of it)."),
) -> int:
    """End a silence now: its summary is sent and what is still open alerts again.

    Example: rtool silence remove 3f9c2a1b
    """
    actx = get_context(ctx)
    now = time.time()
    s = Silences(actx.state).expire_now(ident, now)
    queue([], actx.config.notify, actx.state, now)  # ends it: summary into the outbox
    report = flush(actx.config.notify, actx.state, now)
    typer.echo(f"silence {s.id} ended ({len(s.held) + s.dropped} notification(s) held)")
    for line in report.lines():
        typer.echo(line)
    return 0
