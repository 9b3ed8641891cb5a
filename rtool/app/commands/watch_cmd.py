"""`rtool watch NAME` for every registered watchdog (made from its declaration by
watch_auto.py), and the commands written here: `rtool watch all`.

Every command prints one status line per check and exits like a monitoring plugin: 0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN (`rtool.watchdogs.runner.run_watch`). A command that is not
one watchdog's is a module with its body (a function of the context and its own options that
returns how to build its watchdogs, see `watch_common.WatchCommand`) and one line in `WRITTEN`.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.plumbing import errors, watch_auto
from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.helptext import tidy
from rtool.app.plumbing.watch_common import Build, WatchCommand
from rtool.core.registry import load
from rtool.watchdogs.registry import from_config

if TYPE_CHECKING:
    from rtool.watchdogs.base import Watchdog

#: The written commands: name -> "module:function" of its body, listed after the watchdogs'.
WRITTEN: dict[str, str] = {
    "all": "rtool.app.commands.watch_cmd:all_cmd",
}


class _WatchGroup(errors.PolicyGroup):
    """One command per registered watchdog (watch_auto.py), then the written ones."""

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in self.commands:
            found = _written(name) if name in WRITTEN else _generated(name)
            if found is None:
                return None
            self.commands[name] = found
        return self.commands[name]

    def list_commands(self, ctx: Any) -> list[str]:
        made = watch_auto.registered()
        return [*made, *(n for n in WRITTEN if n not in made)]


def _generated(name: str) -> Any:
    return watch_auto.command_for(name)


def _written(name: str) -> Any:
    """The command of a written body: its own options as typer reads its signature."""

    body = load(WRITTEN[name])
    holder = typer.Typer(add_completion=False)
    holder.command(name)(body)
    own = typer.main.get_command(holder).params
    return tidy(WatchCommand(name, own, body, inspect.getdoc(body) or ""))


app = errors.group(
    errors.WATCH,
    base=_WatchGroup,
    help="Exit codes like a monitoring plugin: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n\n"
    "Example: rtool watch disk /scratch --max-used 80% --tee logs/train.log",
    no_args_is_help=True,
)


app.callback()(lambda: None)  # a group, though no command is registered on it


def all_cmd(ctx: typer.Context) -> Build:
    """Every [[watch.*]] entry of the config in one sweep; the worst status is the exit code.

    Example: rtool --config rtool.toml watch all --tee logs/train.log
    """

    cfg = get_context(ctx).config

    def build(t: float) -> list[Watchdog]:
        return [*from_config(cfg.watch.model_copy(update={"timeout": t}), cfg)]

    return build
