"""`rtool watch NAME` for a registered watchdog that `watch_cmd` writes no command for: one
option per field of its config entry (required fields are arguments, `Field(description=...)`
is the help), plus --json, --no-notify, --tee, --timeout and --prom-textfile. Built when
first asked for, so the CLI's start-up does not import the watchdogs."""

from __future__ import annotations

import inspect
import types
import typing
from pathlib import Path
from typing import Any

import typer

from rtool.commands import watch_common

#: (name, typer parameter, type) of the options every `rtool watch` command has.
COMMON = (
    ("json_out", watch_common.JSON, bool),
    ("no_notify", watch_common.NO_NOTIFY, bool),
    ("tee", watch_common.TEE, Path | None),
    ("timeout", watch_common.TIMEOUT, str | None),
    ("prom", watch_common.PROM, Path | None),
)


def registered(exclude: set[str]) -> list[str]:
    """Names of configurable registered watchdogs without a written command."""
    from watchdogs.registry import configurable

    return [name for name in configurable() if name not in exclude]


def command_for(name: str) -> Any:
    """The click command `rtool watch NAME` for the registered watchdog `name` (or None)."""
    from watchdogs.registry import by_name

    factory = by_name(name)
    if factory is None or not factory.in_config:
        return None

    def command(ctx: typer.Context, **given: Any) -> int:
        common = {key: given.pop(key) for key, _, _ in COMMON}
        spec = watch_common.make_spec(factory.spec, **given)
        return watch_common.run(ctx, lambda t: [factory([spec], t)], **common)

    command.__signature__ = _signature(factory.spec)  # type: ignore[attr-defined]
    command.__doc__ = (factory.__doc__ or f"The {name} watchdog.").split("\n\n")[0]
    sub = typer.Typer()
    sub.command(name)(command)
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
    for field, option, type_ in COMMON:
        params.append(inspect.Parameter(field, kind, default=option, annotation=type_))
    return inspect.Signature(params, return_annotation=int)


def _cli_type(annotation: Any) -> Any:
    """bool, int and float stay; lists become repeatable text options; the rest is text that
    the entry's validators parse (durations, sizes, percentages)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = args[0] if len(args) == 1 else str
    if typing.get_origin(annotation) is list:
        return list[str]
    return annotation if annotation in (bool, int, float) else str
