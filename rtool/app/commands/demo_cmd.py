"""`rtool demo`: everything rtool does, on a real (local) Slurm, in a few minutes."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    directory: Path | None = typer.Option(
        None,
        "--dir",
        help="Workspace folder (new or empty; kept afterwards). Default: a temp folder, removed.",
    ),
    with_servers: bool = typer.Option(
        False,
        "--with-servers",
        help="Also send the alerts by email and Slack, to a local SMTP server and a local "
        "Slack-like server, and print what they receive.",
    ),
    keep: bool = typer.Option(
        False,
        "--keep",
        help="Keep the temp workspace, and the local Slurm if the demo started it.",
    ),
) -> int:
    """Starts the local single-node Slurm when none is reachable.

    Exit code: 0 when every step happened as expected, 1 otherwise (the summary says why).

    Example: rtool demo --with-servers --dir /tmp/rtool-demo
    """
    from rtool.app.demo.run import run_demo

    return run_demo(directory, with_servers, keep)


def register(cli: typer.Typer) -> None:
    """Add this module's commands to the top-level CLI."""
    cli.command("demo")(demo)
