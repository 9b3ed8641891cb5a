"""`rtool watch ...` (placeholder: filled in by the watch issue)."""

from __future__ import annotations

import typer

app = typer.Typer(help="watch commands.", no_args_is_help=True)
