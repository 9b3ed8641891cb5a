"""`rtool notify ...` (placeholder: filled in by the notify issue)."""

from __future__ import annotations

import typer

app = typer.Typer(help="notify commands.", no_args_is_help=True)
