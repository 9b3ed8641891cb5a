"""`rtool config check|show|path`."""

from __future__ import annotations

import json

import typer

from rtool.app.commands import errors
from rtool.app.context import get_context
from rtool.core.config import find_config_path, redacted

app = errors.group(
    errors.DEFAULT,
    help="Examples:\n\n  rtool config check\n\n  rtool --config team.toml config show",
    no_args_is_help=True,
)


@app.command("check")
def check(ctx: typer.Context) -> int:
    """Validate the config; list every error with its key path and line (exit 2).

    Example: rtool --config ~/rtool.toml config check
    """
    from rtool.app.appconfig import load_config

    actx = get_context(ctx)
    path = find_config_path(actx.config_path)
    load_config(actx.config_path)  # the whole schema, defaults too; raises listing every problem
    typer.echo(f"config OK: {path or 'built-in defaults (no config file found)'}")
    return 0


@app.command("show")
def show(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="JSON output.")
) -> int:
    """Print the effective config (defaults filled in, secrets redacted) and rtool's version.

    Example: rtool config show --json
    """
    from rtool import __version__

    actx = get_context(ctx)
    data = redacted(actx.config)
    if as_json:
        typer.echo(json.dumps({"rtool_version": __version__, **data}, indent=2))
    else:
        path = find_config_path(actx.config_path)
        typer.echo(f"# rtool {__version__}: effective config from {path or 'built-in defaults'}")
        typer.echo(_to_toml(data))
    return 0


@app.command("path")
def path(ctx: typer.Context) -> int:
    """Print which config file is used (search order: --config, $RTOOL_CONFIG, ./rtool.toml,
    ~/.config/rtool/rtool.toml).

    Example: RTOOL_CONFIG=~/rtool.toml rtool config path
    """
    found = find_config_path(get_context(ctx).config_path)
    typer.echo(str(found) if found else "(none: built-in defaults)")
    return 0


def _to_toml(data: dict, prefix: str = "") -> str:
    scalars, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif value is not None:
            scalars.append(f"{key} = {json.dumps(value)}")
    out = []
    if scalars:
        if prefix:
            out.append(f"[{prefix}]")
        out.extend(scalars)
        out.append("")
    for key, value in tables:
        body = _to_toml(value, f"{prefix}.{key}" if prefix else key)
        if body.strip():
            out.append(body)
    return "\n".join(out)
