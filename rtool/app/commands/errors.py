"""One error handler per command group: which exit code an error gives, and how it is shown.

Every command group is a typer app built on `PolicyGroup` with its `ExitPolicy`; errors raised
while that group parses its arguments or runs a command are tagged with the group's exit code
(the innermost group wins). `rtool.app.cli.main` prints the error as one line (`--debug`: with the
traceback) and exits with `exit_code(exc)`.

- other commands (`DEFAULT`): 2 for usage and config errors, 1 for every other failure;
- `rtool watch` (`WATCH`): 3 UNKNOWN for all of its own errors, like a monitoring plugin
  (0/1/2 are reserved for the checks' OK/WARNING/CRITICAL).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer
import typer.core

from rtool.core.errors import ConfigError, RtoolError, UsageError
from rtool.core.redact import redact

# typer >= 0.2x vendors click as typer._click; older releases use click itself.
click_exceptions: Any = importlib.import_module(
    "typer._click.exceptions" if importlib.util.find_spec("typer._click") else "click.exceptions"
)
#: Not errors: exits on purpose (`--help`, typer.Exit) and Ctrl-C.
PASS_THROUGH = (
    typer.Exit,
    getattr(click_exceptions, "Exit", typer.Exit),
    typer.Abort,
    getattr(click_exceptions, "Abort", typer.Abort),
    KeyboardInterrupt,
)
_TAG = "rtool_exit_code"


@dataclass(frozen=True)
class ExitPolicy:
    """A command group's exit codes."""

    usage: int  # bad flags or arguments, UsageError, ConfigError
    failure: int  # any other error (RtoolError, or an unexpected exception)

    def code(self, exc: BaseException) -> int:
        if isinstance(exc, (click_exceptions.UsageError, UsageError, ConfigError)):
            return self.usage
        if isinstance(exc, click_exceptions.ClickException):  # bad file argument and the like
            return self.usage
        return self.failure


DEFAULT = ExitPolicy(usage=2, failure=1)
WATCH = ExitPolicy(usage=3, failure=3)


def exit_code(exc: BaseException, policy: ExitPolicy = DEFAULT) -> int:
    """The exit code of an error: its group's, else `policy`'s."""
    tagged = getattr(exc, _TAG, None)
    return tagged if isinstance(tagged, int) else policy.code(exc)


def _tag(exc: Exception, policy: ExitPolicy) -> None:
    if not isinstance(exc, PASS_THROUGH) and getattr(exc, _TAG, None) is None:
        setattr(exc, _TAG, policy.code(exc))


class PolicyGroup(typer.core.TyperGroup):
    """A typer group whose errors get its `policy`'s exit codes.

    `rtool.app.commands.lazy.load` may leave its subcommands unconverted: `command_order` names
    them and `build_command(name)` converts one when it is first used (`rtool watch disk`
    converts `disk` alone, not typer's work for every other `rtool watch` command)."""

    policy: ExitPolicy = DEFAULT
    command_order: tuple[str, ...] = ()
    build_command: Callable[[str], Any] | None = None

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is None and self.build_command is not None and cmd_name in self.command_order:
            found = self.commands[cmd_name] = self.build_command(cmd_name)
        return found

    def list_commands(self, ctx: Any) -> list[str]:
        listed = list(super().list_commands(ctx))
        return [*self.command_order, *(n for n in listed if n not in self.command_order)]

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except Exception as exc:
            _tag(exc, self.policy)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            _tag(exc, self.policy)
            raise


def group(policy: ExitPolicy, base: type[PolicyGroup] = PolicyGroup, **kwargs: Any) -> typer.Typer:
    """A typer app for a command group whose errors get `policy`'s exit codes."""
    chosen = policy

    class Group(base):  # type: ignore[valid-type,misc]
        policy = chosen

    return typer.Typer(cls=Group, **kwargs)


def command_class(policy: ExitPolicy) -> type[typer.core.TyperCommand]:
    """A command class whose errors (bad options included) get `policy`'s exit codes: for a
    top-level command that exits like a watchdog (`rtool drill`)."""
    chosen = policy

    class Command(typer.core.TyperCommand):
        def make_context(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().make_context(*args, **kwargs)
            except Exception as exc:
                _tag(exc, chosen)
                raise

        def invoke(self, ctx: Any) -> Any:
            try:
                return super().invoke(ctx)
            except Exception as exc:
                _tag(exc, chosen)
                raise

    return Command


def message(exc: BaseException) -> str:
    """The one line (or the config error's lines) shown for an error, secrets masked."""
    return redact(_message(exc))


def _message(exc: BaseException) -> str:
    if isinstance(exc, click_exceptions.ClickException):
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return f"rtool: {exc.format_message()}{hint}"
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
