"""`rtool cron ...` (placeholder: filled in by the cron issue)."""

from __future__ import annotations

import typer

app = typer.Typer(help="cron commands.", no_args_is_help=True)
