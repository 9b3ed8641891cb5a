"""`rtool notify test|flush|status`."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import typer

from rtool.app.plumbing import errors
from rtool.app.plumbing.context import get_context
from rtool.core.errors import UsageError
from rtool.notify import channels
from rtool.notify.deliver import flush as do_flush
from rtool.notify.engine import send_test
from rtool.notify.status import collect, render

if TYPE_CHECKING:
    from rtool.notify.config import NotifyConfig

app = typer.Typer(
    cls=errors.PolicyGroup,
    help="Examples:\n\n"
    "  rtool notify test                  # a test alert through every channel\n\n"
    "  rtool notify test --channel slack\n\n"
    "  rtool notify flush                 # deliver what is queued now\n\n"
    "  rtool notify status --json",
    no_args_is_help=True,
)


@app.command("test")
def test(
    ctx: typer.Context,
    channel: str | None = typer.Option(
        None, "--channel", "-c", help=f"Only this channel: {', '.join(channels.names())}."
    ),
) -> int:
    """Send a test alert through each configured channel; print per-channel success or the
    reason it failed; exit 1 if any failed.

    Example: rtool notify test --channel email
    """
    cfg = get_context(ctx).config.notify
    configured = cfg.configured()
    if channel is not None and channel not in configured:
        raise UsageError(
            f"channel {channel!r} is not configured (configured: {', '.join(configured)})"
        )
    return send_tests(cfg, [channel] if channel else configured)


def send_tests(cfg: NotifyConfig, names: list[str]) -> int:
    """Send one test alert through each channel in `names` (no outbox, no alert state) and
    print whether its server accepted it; 1 when one did not (`rtool config check
    --send-test` too)."""
    results = send_test(cfg, names)
    for d in results:
        if d.outcome == "sent":
            typer.echo(f"{d.channel}: OK" + (f" ({d.error})" if d.error else ""))
        else:
            typer.echo(f"{d.channel}: FAILED - {d.error}")
    return 1 if any(d.outcome != "sent" for d in results) else 0


@app.command("flush")
def flush(
    ctx: typer.Context,
    respect_backoff: bool = typer.Option(
        False, "--respect-backoff", help="Skip items still waiting out their retry backoff."
    ),
) -> int:
    """Deliver the outbox now (oldest first). Exit 0 when it is empty afterwards, 1 when
    something is still queued or failed permanently.

    Example: rtool notify flush
    """
    actx = get_context(ctx)
    report = do_flush(actx.config.notify, actx.state, force=not respect_backoff)
    for line in report.lines():
        typer.echo(line)
    left = sum(report.queued.values())
    typer.echo("outbox empty" if not left else f"{left} notification(s) still queued")
    return 0 if report.ok else 1


@app.command("status")
def status(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="JSON output.")
) -> int:
    """Outbox size, last delivery and last error per channel, and the keys now alerting.

    Example: rtool notify status --json
    """
    actx = get_context(ctx)
    data = collect(actx.config.notify, actx.state, time.time())
    typer.echo(json.dumps(data, indent=2) if as_json else render(data))
    return 0
