"""The `rtool` command. The only module that exits the process and maps errors to exit codes.

Exit codes: `rtool watch ...` 0 OK / 1 WARNING / 2 CRITICAL / 3 UNKNOWN; other commands
0 success, 1 failure, 2 usage or config error. Expected errors print one line (`--debug`
adds the traceback).
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path
from typing import NoReturn

import typer

import rtool
from rtool.app.plumbing import errors
from rtool.app.plumbing.context import AppContext
from rtool.app.plumbing.helptext import HELP_NAMES
from rtool.app.plumbing.lazy import LazyGroup
from rtool.core import redact
from rtool.core.errors import UsageError

#: Subcommands are loaded on first use (rtool/app/plumbing/lazy.py lists them).
cli = typer.Typer(
    cls=LazyGroup,
    name="rtool",
    help="Keep long ML training runs on Slurm alive and watched.\n\n"
    "Watchdogs, a Slurm crontab emulator, sbatch templates with arrays and signals, "
    "alerts by email and Slack, and an in-loop shim for the training script.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": HELP_NAMES},
)

_DEBUG = False


def _show_version(value: bool) -> None:
    """`rtool 0.2.0 from /venv/.../site-packages/rtool (Python 3.11.7)`: which rtool runs."""
    if value:
        where = Path(rtool.__file__).resolve().parent
        typer.echo(f"rtool {rtool.__version__} from {where} (Python {sys.version.split()[0]})")
        raise typer.Exit(0)


@cli.callback()
def _global_options(
    ctx: typer.Context,
    config: list[Path] | None = typer.Option(
        None,
        "--config",
        help="Read exactly this config file (repeat to layer several, later ones winning). "
        "Else $RTOOL_CONFIG (PATH[:PATH...]), else ~/.config/rtool/rtool.toml then "
        "./rtool.toml, layered; none: built-in defaults.",
        envvar=None,
        show_default=False,
    ),
    no_config: bool = typer.Option(
        False,
        "--no-config",
        help="Built-in defaults only: read no config file (the batch script's pre-flight uses "
        "this when rtool submit found none, so a file planted in the submit folder is ignored).",
    ),
    verbose: int = typer.Option(0, "-v", "--verbose", count=True, help="More log output (-vv)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Only errors."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=_show_version,
        expose_value=False,
        help="Print rtool's version, where it is installed, and exit.",
    ),
) -> None:
    global _DEBUG
    _DEBUG = debug
    if no_config and config:
        raise UsageError("give --config or --no-config, not both")
    ctx.obj = AppContext(
        config_paths=tuple(config or ()),
        verbose=verbose,
        quiet=quiet,
        debug=debug,
        no_config=no_config,
    )
    level = logging.ERROR if quiet else [logging.WARNING, logging.INFO][min(verbose, 1)]
    if verbose >= 2 or debug:
        level = logging.DEBUG
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    redact.install()  # no secret in any log line


def app(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: run the CLI and exit with its code."""
    sys.exit(main(argv))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (tests call this in-process)."""
    global _DEBUG
    _DEBUG = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        rv = typer.main.get_command(cli).main(args=argv, prog_name="rtool", standalone_mode=False)
    except errors.PASS_THROUGH as exc:
        return _passed(exc)
    except Exception as exc:
        _report(exc)
        return errors.exit_code(exc)
    return int(rv) if isinstance(rv, int) else 0


def _passed(exc: BaseException) -> int:
    """`--help`, typer.Exit, Abort and Ctrl-C: not errors."""
    if isinstance(exc, KeyboardInterrupt):
        typer.echo("Interrupted.", err=True)
        return 130
    if isinstance(exc, typer.Abort):
        typer.echo("Aborted.", err=True)
        return 1
    return int(getattr(exc, "exit_code", 0))


def _report(exc: BaseException) -> None:
    """One line (a config error lists its problems); the traceback only with --debug."""
    if _DEBUG:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        typer.echo(redact.redact(text), err=True, nl=False)
    if type(exc).__name__ == "NoArgsIsHelpError":  # click's, for a group run bare
        exc.show()  # type: ignore[attr-defined]  # the group's help
        return
    typer.echo(errors.message(exc), err=True)  # already redacted
