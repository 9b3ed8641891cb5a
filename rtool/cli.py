"""The `rtool` command. The only module that exits the process and maps errors to exit codes.

Exit codes: `rtool watch ...` 0 OK / 1 WARNING / 2 CRITICAL / 3 UNKNOWN; other commands
0 success, 1 failure, 2 usage or config error. Expected errors print one line (`--debug`
adds the traceback).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

import typer

from rtool.commands import (
    config_cmd,
    cron_cmd,
    demo_cmd,
    history_cmd,
    notify_cmd,
    status_cmd,
    submit_cmd,
    watch_cmd,
)
from rtool.context import AppContext
from rtool.core.errors import RtoolError

cli = typer.Typer(
    name="rtool",
    help="Keep long ML training runs on Slurm alive and watched.\n\n"
    "Watchdogs, a Slurm crontab emulator, sbatch templates with arrays and signals, "
    "alerts by email and Slack, and an in-loop shim for the training script.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_DEBUG = False
# typer >= 0.2x vendors click as typer._click; older releases use click itself.
_click: Any = importlib.import_module(
    "typer._click.exceptions" if importlib.util.find_spec("typer._click") else "click.exceptions"
)
_EXIT = (typer.Exit, getattr(_click, "Exit", typer.Exit))
_ABORT = (typer.Abort, getattr(_click, "Abort", typer.Abort))


@cli.callback()
def _global_options(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None,
        "--config",
        help="Config file (else $RTOOL_CONFIG, ./rtool.toml, "
        "~/.config/rtool/rtool.toml, built-in defaults).",
        envvar=None,
    ),
    verbose: int = typer.Option(0, "-v", "--verbose", count=True, help="More log output (-vv)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Only errors."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    global _DEBUG
    _DEBUG = debug
    ctx.obj = AppContext(config_path=config, verbose=verbose, quiet=quiet, debug=debug)
    level = logging.ERROR if quiet else [logging.WARNING, logging.INFO][min(verbose, 1)]
    if verbose >= 2 or debug:
        level = logging.DEBUG
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )


cli.add_typer(watch_cmd.app, name="watch")
cli.add_typer(cron_cmd.app, name="cron")
cli.add_typer(notify_cmd.app, name="notify")
cli.add_typer(config_cmd.app, name="config")
submit_cmd.register(cli)
status_cmd.register(cli)
history_cmd.register(cli)
demo_cmd.register(cli)


def app(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: run the CLI and exit with its code."""
    sys.exit(main(argv))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (tests call this in-process)."""
    global _DEBUG
    _DEBUG = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        rv = typer.main.get_command(cli).main(args=argv, prog_name="rtool", standalone_mode=False)
    except _click.ClickException as exc:
        exc.show()
        return 2
    except _EXIT as exc:
        return int(getattr(exc, "exit_code", 0))
    except _ABORT:
        typer.echo("Aborted.", err=True)
        return 1
    except RtoolError as exc:
        _report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        typer.echo("Interrupted.", err=True)
        return 130
    return int(rv) if isinstance(rv, int) else 0


def _report(exc: BaseException) -> None:
    if _DEBUG:
        traceback.print_exception(type(exc), exc, exc.__traceback__)
    typer.echo(f"rtool: {exc}", err=True)
