"""`rtool config check|show|path`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from rtool import __version__
from rtool.app.commands.notify_cmd import send_tests
from rtool.app.plumbing import errors
from rtool.app.plumbing.context import AppContext, get_context
from rtool.core.config.render import effective, masked, origin_of, origins_map, to_toml
from rtool.core.config.secrets import problems
from rtool.core.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

app = typer.Typer(
    cls=errors.PolicyGroup,
    help="Examples:\n\n  rtool config check --send-test\n\n  rtool config show --origin\n\n"
    "  rtool --config team.toml config show",
    no_args_is_help=True,
)


def _files(files: list[Path]) -> str:
    return ", ".join(str(f) for f in files) or "built-in defaults (no config file found)"


@app.command("check")
def check(
    ctx: typer.Context,
    send_test: bool = typer.Option(
        False,
        "--send-test",
        help="Then send one test alert through each configured channel and say whether its "
        "server accepted it (exit 1 when one did not).",
    ),
) -> int:
    """Validate the config and resolve every secret it names; list every problem with its key
    path, file and line (exit 2).

    A secret's environment variable must be set, its file yours, not readable by others
    (0600) and not empty; URLs must be well-formed http(s) URLs.

    Example: rtool config check --send-test
    """
    actx = get_context(ctx)
    config = actx.config  # the whole schema, defaults too; raises listing every problem
    found = problems(config) if actx.config_files else []
    if found:
        raise ConfigError(found, _files(actx.config_files))
    typer.echo(f"config OK: {_files(actx.config_files)}")
    if send_test:
        return send_tests(config.notify, config.notify.configured())
    return 0


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="JSON output."),
    origin: bool = typer.Option(
        False, "--origin", help="Say where each value came from: a file and line, or default."
    ),
) -> int:
    """Print the effective config as TOML that `rtool config check` accepts back: values as
    the files wrote them, defaults filled in, secrets masked.

    Example: rtool config show --origin
    """
    actx = get_context(ctx)
    data = masked(effective(actx.config, actx.layered))
    files = [str(f) for f in actx.config_files]
    if as_json:
        doc = {"rtool_version": __version__, "config_files": files, "config": data}
        if origin:
            doc["origins"] = origins_map(data, actx.layered)
        typer.echo(json.dumps(doc, indent=2))
        return 0
    later = " (later files win)" if len(files) > 1 else ""
    typer.echo(f"# rtool {__version__}: effective config from {_files(actx.config_files)}{later}")
    typer.echo(to_toml(data, origin_of(actx.layered) if origin else None), nl=False)
    return 0


@app.command("path")
def path(ctx: typer.Context) -> int:
    """Print the config files read, in order (later ones win): --config PATH (repeatable),
    else $RTOOL_CONFIG, else ~/.config/rtool/rtool.toml then ./rtool.toml.

    Example: rtool config path
    """
    actx: AppContext = get_context(ctx)
    for found in actx.config_files:
        typer.echo(str(found))
    if not actx.config_files:
        typer.echo("(none: built-in defaults)")
    return 0
