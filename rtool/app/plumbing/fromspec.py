"""Commands made from a declaration: one parameter per field of a config model, with the
field's help, flag and default (`rtool.core.config.fields`), and the model's entries made from
what was given. `rtool watch NAME` and `rtool preflight` are made this way, so a new watchdog or
pre-flight check needs no command of its own; `rtool submit` and `rtool drill` use `parameter`
and `BodyCommand` too.

Defaults are never written here: an option that is not given is left out of the entry, which
then takes the declared default (or, with `section`, the config's value of that key); the help
shows it (`(default: 90%)`, `(default: [nodes.preflight] dirs)`). This module does not postpone
annotations: `parameter` needs a real signature, evaluated when `one` is defined.
"""

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer
import typer.core
import typer.main
from pydantic import ValidationError

from rtool.app.plumbing.sections import config_field
from rtool.core.config.fields import choices, cli_of, default_of, flag_of, shown_default, unit_of
from rtool.core.errors import UsageError


def parameter(name: str, annotation: Any, info: Any) -> Any:
    """The click parameter `name` that typer makes of `name: annotation = info` (`info` a
    `typer.Option(...)` or `typer.Argument(...)`)."""

    def one(value: annotation = info) -> None:  # type: ignore[valid-type]
        """The one parameter."""

    holder = typer.Typer(add_completion=False)
    holder.command()(one)
    [param] = typer.main.get_command(holder).params
    param.name = name
    return param


class BodyCommand(typer.core.TyperCommand):
    """A command of declared parameters: `body(ctx, **values)` runs it and returns its exit code."""

    def __init__(self, name: str, params: list[Any], body: Callable[..., Any], help: str) -> None:
        super().__init__(name, params=params, help=help)
        self.body = body

    def invoke(self, ctx: Any) -> Any:
        return self.body(ctx, **as_given(ctx.params))


def as_given(params: dict[str, Any]) -> dict[str, Any]:
    """The parsed values as typer hands them to a function: a list, None when none given."""
    many = (list, tuple)
    return {k: (list(v) or None) if isinstance(v, many) else v for k, v in params.items()}


@dataclass(frozen=True)
class Made:
    """How the command line gives one field of the model."""

    field: str
    flag: str | None  # None: an argument
    switch: tuple[str, Any] | None = None  # a flag without a value that sets this value
    each: bool = False  # several values: one entry per value


@dataclass(frozen=True)
class Declared:
    """The parameters of a command made from `model`, and how each maps back to a field."""

    model: type[Any]
    params: list[Any]  # click parameters, in order
    made: dict[str, Made]
    #: The config section whose keys give the defaults (`nodes.preflight`), or None.
    section: str | None = None


def declare(
    model: type[Any], *, skip: set[str] | None = None, section: str | None = None
) -> Declared:
    """One parameter per command-line field of `model` (fields in `skip` are left out)."""
    params: list[Any] = []
    made: dict[str, Made] = {}
    for name, info in model.model_fields.items():
        cli = cli_of(info)
        if not cli.cli or name in (skip or set()):
            continue
        param, m = _parameter(name, info, section)
        params.append(param)
        made[name] = m
    return Declared(model, params, made, section)


def _parameter(name: str, info: Any, section: str | None) -> tuple[Any, Made]:
    cli = cli_of(info)
    typ = cli_type(info.annotation, info.metadata)
    text = help_text(name, info, section)
    flag = flag_of(name, info)
    switch = cli.switch
    if switch is None and typ is bool and section is None:
        own = bool(default_of(info))  # a flag that turns the declared default around
        switch = ("--no-" + flag[2:] if own else flag, not own)
    if switch is not None:
        option = typer.Option(False, switch[0], help=text)
        return parameter(name, bool, option), Made(name, switch[0], switch)
    many = list[typ] if cli.each else typ  # type: ignore[valid-type]
    if info.is_required() and cli.flag is None:
        arg = typer.Argument(..., help=text, metavar=name.upper(), show_default=False)
        return parameter(name, many, arg), Made(name, None, each=cli.each)
    if info.is_required():
        option = typer.Option(..., flag, help=text, metavar=_metavar(info))
        return parameter(name, many, option), Made(name, flag, each=cli.each)
    flags = f"{flag}/--no-{flag[2:]}" if typ is bool else flag
    option = typer.Option(None, flags, help=text, show_default=False, metavar=_metavar(info))
    return parameter(name, many | None, option), Made(name, flag, each=cli.each)


def _metavar(info: Any) -> str | None:
    """`DURATION`, `SIZE`, `PERCENT` or `lfs|mmlsquota|simple`; None: click's (TEXT, INTEGER)."""
    unit = unit_of(info.annotation, info.metadata)
    options = choices(info.annotation)
    return unit.upper() if unit else ("|".join(options) if options else None)


def cli_type(annotation: Any, metadata: Any = ()) -> Any:
    """bool, int and float stay; lists are repeatable (of int, float or text); the rest is
    text that the model's validators parse (durations, sizes, percentages, choices)."""
    if unit_of(annotation, metadata):
        return str
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else str
        if unit_of(annotation):
            return str
    if typing.get_origin(annotation) is list:
        inner: Any = typing.get_args(annotation)[0]
        item = inner if inner in (int, float) else str
        return list[item]  # type: ignore[valid-type]
    return annotation if annotation in (bool, int, float) else str


def help_text(name: str, info: Any, section: str | None = None) -> str:
    """The field's description, its choices and its default, as the command's help shows it."""
    text = (info.description or "").rstrip()
    cli = cli_of(info)
    if section is not None:
        text += " " + default_note(f"{section}.{name}")
    elif cli.default_from:
        text += " " + default_note(cli.default_from)
    elif cli.switch is not None:
        text += f" (this flag: {cli.switch[1]})"
    elif (value := shown_default(info)) is not None and not isinstance(default_of(info), bool):
        text += f" (default: {value})"  # a flag says by its name what it turns
    return text.strip()


def default_note(path: str) -> str:
    """`(default: [cron] grace, 10m)`: the config key `path` and its built-in default."""
    _, info = config_field(path)
    section, _, key = path.rpartition(".")
    value = shown_default(info)
    return f"(default: [{section}] {key}{', ' + value if value is not None else ''})"


def values(declared: Declared, given: dict[str, Any]) -> dict[str, Any]:
    """The fields given on the command line (left out: not given)."""
    out: dict[str, Any] = {}
    for name, value in given.items():
        m = declared.made.get(name)
        if m is None:
            continue
        if m.switch is not None:
            if value:
                out[name] = m.switch[1]
            continue
        if value is None or (isinstance(value, (list, tuple)) and not value):
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def entries(
    declared: Declared, given: dict[str, Any], base: dict[str, Any] | None = None
) -> list[Any]:
    """The model's entries from what was given over `base`: one per value of an `each` field."""
    vals = {**(base or {}), **values(declared, given)}
    each = next((m.field for m in declared.made.values() if m.each), None)
    if each is None or each not in vals:
        return [make(declared, vals)]
    many = vals.pop(each)
    return [make(declared, {**vals, each: v}) for v in (many if isinstance(many, list) else [many])]


def make(declared: Declared, vals: dict[str, Any]) -> Any:
    """An entry; a bad value is a one-line usage error naming the flag (or argument)."""
    try:
        return declared.model(**vals)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        m = declared.made.get(field)
        where = (
            (m.flag or field.upper()) if m else (f"--{field.replace('_', '-')}" if field else "")
        )
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise UsageError(f"{where}: {msg}" if where else msg) from None


def tag(command: Any, declared: Declared) -> Any:
    """Mark each click parameter of `command` with the field it gives (`rtool_field`), for the
    tests that compare the help's defaults with the declarations."""
    for param in command.params:
        if param.name in declared.made:
            param.rtool_field = (declared.model, param.name, declared.section)
    return command
