"""One error handler per command group: which exit code an error gives, and how it is shown.

Every command group is a typer app built on `PolicyGroup` (its `policy`, `DEFAULT` unless it
says otherwise): errors raised while it parses its arguments or runs a command get the group's
exit code (the innermost group wins). `rtool.app.cli.main` prints the error as one line
(`--debug`: with the traceback) and exits with `exit_code(exc)`.

- other commands (`DEFAULT`): 2 for usage and config errors, 1 for every other failure;
- `rtool watch` (`WATCH`): 3 UNKNOWN for all of its own errors, like a monitoring plugin
  (0/1/2 are reserved for the checks' OK/WARNING/CRITICAL).

A group also refuses an empty value given to its own options and to its commands'
(`refuse_empty`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import typer
import typer.core

from rtool.core.errors import ConfigError, RtoolError, UsageError
from rtool.core.redact import redact


def _click_class(name: str) -> type[Exception]:
    """click's `name` exception class as typer raises it: typer >= 0.2x runs on a copy of click
    of its own, older releases on click itself; `typer.BadParameter` is public in both."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


#: A bad flag or argument (click's UsageError), and click's errors at large (a bad file...).
CLICK_USAGE = _click_class("UsageError")
CLICK_ERROR = _click_class("ClickException")
#: Not errors: exits on purpose (`--help`, typer.Exit) and Ctrl-C.
PASS_THROUGH = (typer.Exit, typer.Abort, KeyboardInterrupt)
_TAG = "rtool_exit_code"


@dataclass(frozen=True)
class ExitPolicy:
    """A command group's exit codes."""

    usage: int  # bad flags or arguments, UsageError, ConfigError
    failure: int  # any other error (RtoolError, or an unexpected exception)

    def code(self, exc: BaseException) -> int:
        if isinstance(exc, (CLICK_ERROR, UsageError, ConfigError)):  # a bad file argument too
            return self.usage
        return self.failure


DEFAULT = ExitPolicy(usage=2, failure=1)
WATCH = ExitPolicy(usage=3, failure=3)


def exit_code(exc: BaseException, policy: ExitPolicy = DEFAULT) -> int:
    """The exit code of an error: its group's, else `policy`'s."""
    tagged = getattr(exc, _TAG, None)
    return tagged if isinstance(tagged, int) else policy.code(exc)


@contextlib.contextmanager
def _tagged(policy: ExitPolicy) -> Iterator[None]:
    """An error raised inside gets `policy`'s exit code, unless an inner group gave it one."""
    try:
        yield
    except Exception as exc:
        if not isinstance(exc, PASS_THROUGH) and getattr(exc, _TAG, None) is None:
            setattr(exc, _TAG, policy.code(exc))
        raise


class Policed:
    """A click command (or group) whose errors, bad options included, get `policy`'s codes."""

    policy: ExitPolicy = DEFAULT

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _tagged(self.policy):
            return super().make_context(*args, **kwargs)  # type: ignore[misc]

    def invoke(self, ctx: Any) -> Any:
        with _tagged(self.policy):
            return super().invoke(ctx)  # type: ignore[misc]


class PolicyGroup(Policed, typer.core.TyperGroup):
    """A typer group whose errors get its `policy`'s exit codes; its commands refuse empty
    values."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        refuse_empty(self, ctx, args)
        return list(super().parse_args(ctx, args))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The subcommand; a command (a group checks its own) refuses empty values first."""
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not isinstance(cmd, PolicyGroup):
            with _tagged(getattr(cmd, "policy", self.policy)):
                settings = cmd.context_settings or {}
                refuse_empty(cmd, typer.Context(cmd, info_name=name, parent=ctx, **settings), rest)
        return name, cmd, rest


def refuse_empty(command: Any, ctx: Any, args: list[str]) -> None:
    """No option or argument takes an empty value: `--array ''`, `--time ''`, `cron status
    --dir ''` are mistakes (an unset variable in a script), never "the default". The raw text
    is read (click's own parser, before a type turns `''` into the path `.`); a usage error
    names the option (exit 2; `rtool watch`: 3)."""
    given, _, _ = command.make_parser(ctx).parse_args(args=list(args))
    for param in command.get_params(ctx):
        value = given.get(param.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        blank = any(isinstance(v, str) and not v.strip() for v in values)
        if getattr(param, "is_flag", False) or not blank:
            continue
        if param.param_type_name == "option":
            ctx.fail(f"{param.opts[0]}: empty value (leave the option out for its default)")
        ctx.fail(f"{(param.name or 'argument').upper()}: empty value")


def message(exc: BaseException) -> str:
    """The one line (or the config error's lines) shown for an error, secrets masked."""
    return redact(_message(exc))


def _message(exc: BaseException) -> str:
    if isinstance(exc, CLICK_ERROR):
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return f"rtool: {exc.format_message()}{hint}"  # type: ignore[attr-defined]
    if isinstance(exc, RtoolError):
        return f"rtool: {exc}"
    if type(exc).__name__ == "ValidationError" and hasattr(exc, "errors"):  # pydantic's
        return f"rtool: {reason(exc)}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"rtool: internal error: {type(exc).__name__}: {text} (--debug shows the traceback)"


def reason(exc: Any) -> str:
    """The reason a pydantic ValidationError gives (its first error's message, no URL)."""
    try:
        errs = exc.errors(include_url=False, include_input=False)
    except (TypeError, AttributeError):
        errs = []
    if not errs:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid value"
    msg = str(errs[0].get("msg", "invalid value")).removeprefix("Value error, ")
    loc = ".".join(str(p) for p in errs[0].get("loc", ()))
    return f"{loc}: {msg}" if loc else msg
