"""`rtool status`: one screen with everything rtool knows (docs/status.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text

from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.fromspec import default_note
from rtool.app.status.render import render
from rtool.app.status.view import gather
from rtool.app.timeline.page import parse_mode, write
from rtool.app.timeline.status import status_page, watched_runs
from rtool.core.errors import UsageError
from rtool.core.redact import redact, redact_data
from rtool.core.slurm import Slurm
from rtool.core.units import UnitError, parse_duration

#: Status words coloured on a terminal.
STYLES = {
    "CRITICAL": "bold red",
    "WARNING": "yellow",
    "UNKNOWN": "magenta",
    "NOT QUEUED": "bold red",
    "SET": "bold yellow",
    "OK": "green",
}


def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the rtool.status/1 JSON document."),
    cron_dir: Path | None = typer.Option(
        None,
        "--cron-dir",
        help=f"Cron folder {default_note('cron.dir')}.",
        show_default=False,
    ),
    timeout: str | None = typer.Option(
        None,
        "--timeout",
        help=f"Timeout of squeue and of each file probe {default_note('watch.timeout')}.",
    ),
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Write it all to this file as one page, with every stored run's timeline.",
        show_default=False,
    ),
    mode: str | None = typer.Option(None, "--mode", help="The page's file mode (unset: 0600)."),
) -> int:
    """Reads the config and the state dir; sends nothing, changes nothing; one squeue call.
    Exit 0 whatever it shows (see the JSON `status` for a verdict); 2 on a bad config.

    Example: rtool status

    Example: rtool --config ~/rtool.toml status --json | jq .jobs.watched

    Example: rtool status --html status.html
    """
    app_ctx = get_context(ctx)
    cfg = app_ctx.config
    limit = _timeout(timeout, cfg.watch.timeout)
    slurm = Slurm(timeout=limit)
    data = gather(cfg, app_ctx.state, slurm, cwd=Path.cwd(), cron_dir=cron_dir, timeout=limit)
    data = redact_data(data)  # error texts may quote URLs with tokens
    if html is not None:
        runs = watched_runs(cfg, app_ctx.state)
        write(html, status_page(data, runs), parse_mode(mode))
        typer.echo(f"wrote {html}: status {data['status']}, {len(runs)} run(s)")
        return 0
    if as_json:
        typer.echo(json.dumps(data, indent=1, sort_keys=True, default=str))
    elif sys.stdout.isatty():
        _print_rich(redact(render(data)))
    else:
        typer.echo(redact(render(data)), nl=False)
    return 0


def _timeout(text: str | None, default: float) -> float:
    try:
        limit = parse_duration(text) if text else default
    except UnitError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    if limit <= 0:
        raise UsageError("--timeout must be above 0s")
    return limit


def _print_rich(text: str) -> None:
    out = Text(text)
    for word, style in STYLES.items():
        out.highlight_regex(rf"(?<![\w-]){word}(?![\w-])", style)
    Console(highlight=False, soft_wrap=True).print(out, end="")


def register(cli: typer.Typer) -> None:
    cli.command("status")(status)
