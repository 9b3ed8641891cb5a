"""`rtool demo` (placeholder: filled in by the demo/status issue)."""

from __future__ import annotations

import typer


def register(cli: typer.Typer) -> None:
    """Add this module's commands to the top-level CLI."""
