"""`rtool watch NAME` for a registered watchdog that `watch_cmd` writes no command for: one
option per field of its config entry (required fields are arguments, `Field(description=...)`
is the help), plus --json, --no-notify, --tee, --timeout and --prom-textfile. Built when
first asked for, so the CLI's start-up does not import the watchdogs."""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

import typer

from rtool.app.commands import watch_common


def registered(exclude: set[str]) -> list[str]:
    """Names of configurable registered watchdogs without a written command."""
    from rtool.watchdogs.registry import configurable

    return [name for name in configurable() if name not in exclude]


def command_for(name: str) -> Any:
    """The click command `rtool watch NAME` for the registered watchdog `name` (or None)."""
    from rtool.watchdogs.registry import by_name

    factory = by_name(name)
    if factory is None or not factory.in_config:
        return None

    def body(ctx: typer.Context, **given: Any) -> watch_common.Build:
        spec = watch_common.make_spec(factory.spec, **given)
        return lambda t: [factory([spec], t)]

    body.__signature__ = _signature(factory.spec)  # type: ignore[attr-defined]
    body.__doc__ = (factory.__doc__ or f"The {name} watchdog.").split("\n\n")[0]
    sub = typer.Typer()
    sub.command(name)(watch_common.command(body))
    return typer.main.get_command(sub)


def _signature(spec: type[Any]) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("ctx", kind, annotation=typer.Context)]
    for field, info in spec.model_fields.items():
        annotation = _cli_type(info.annotation)
        if info.is_required():
            default: Any = typer.Argument(..., help=info.description)
        else:
            flag = "--" + field.replace("_", "-")
            default = typer.Option(None, flag, help=info.description)
            annotation = annotation | None
        params.append(inspect.Parameter(field, kind, default=default, annotation=annotation))
    return inspect.Signature(params)


def _cli_type(annotation: Any) -> Any:
    """bool, int and float stay; lists become repeatable text options; the rest is text that
    the entry's validators parse (durations, sizes, percentages)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = args[0] if len(args) == 1 else str
    if typing.get_origin(annotation) is list:
        return list[str]
    return annotation if annotation in (bool, int, float) else str
