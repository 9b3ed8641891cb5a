"""Commands whose options come from declarations, in plain typer: `rtool watch NAME` (a
watchdog's config entry), `rtool preflight` (the checks' settings), `rtool submit` and `rtool
drill` (`SubmitRequest`).

`parameter(name, annotation, info)` asks typer for the click parameter of one declared field:
typer reads a function of one parameter whose annotation and default are the field's (a real
signature, evaluated when `one` is defined: this module does not postpone annotations).
`BodyCommand` is a typer command that hands the parsed values to a body, `body(ctx, **values)`.
"""

from collections.abc import Callable
from typing import Any

import typer
import typer.core
import typer.main


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
        return self.body(ctx, **values(ctx.params))


def values(params: dict[str, Any]) -> dict[str, Any]:
    """The parsed values as typer hands them to a function: a list, None when none given."""
    many = (list, tuple)
    return {k: (list(v) or None) if isinstance(v, many) else v for k, v in params.items()}
