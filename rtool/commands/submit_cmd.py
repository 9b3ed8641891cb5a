"""`rtool submit`, `rtool stop`, `rtool save` (placeholder: filled in by the submit issue)."""

from __future__ import annotations

import typer


def register(cli: typer.Typer) -> None:
    """Add this module's commands to the top-level CLI."""
