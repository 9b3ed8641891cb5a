"""No option or argument of the CLI takes an empty value: `--array ''`, `--time ''`,
`rtool cron status --dir ''` are mistakes (an unset variable in a script), never "the default".

`refuse_empty(param)` wraps one click parameter (the help tidy-up calls it for every parameter
of every command): a value given on the command line that is empty or only spaces is a usage
error naming the option (exit 2; `rtool watch`: 3).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from rtool.app.commands.errors import click_exceptions

#: The click that typer runs on (newer typer versions vendor their own copy).
_core: Any = importlib.import_module(
    "typer._click.core" if importlib.util.find_spec("typer._click") else "click.core"
)


def _empty(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, str) and not v.strip() for v in value)
    return False


def refuse_empty(param: Any) -> None:
    """Make `param` refuse an empty value given on the command line (idempotent). The raw text
    is checked, before its type turns `''` into a path `.`."""
    if getattr(param, "_rtool_nonempty", False) or getattr(param, "is_flag", False):
        return
    param._rtool_nonempty = True
    process = param.process_value

    def checked(ctx: Any, value: Any) -> Any:
        given = ctx.get_parameter_source(param.name or "") is _core.ParameterSource.COMMANDLINE
        if given and _empty(value):
            if param.param_type_name == "option":
                why = f"{param.opts[0]}: empty value (leave the option out for its default)"
            else:
                why = f"{(param.name or 'argument').upper()}: empty value"
            raise click_exceptions.UsageError(why, ctx)
        return process(ctx, value)

    param.process_value = checked
