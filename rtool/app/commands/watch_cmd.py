"""`rtool watch NAME` for every registered watchdog, made from its declaration, and the commands
written here: `rtool watch all`.

Every command prints one status line per check and exits like a monitoring plugin: 0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN (`rtool.watchdogs.runner.run_watch`). A watchdog's command has
one parameter per field of its config entry (`rtool.app.plumbing.fromspec`: required fields are
arguments, the others options, with the field's help and default), the class docstring as the
help, plus --json, --no-notify, --tee, --timeout and --prom-textfile; it is made when first asked
for, so the CLI's start-up does not import the watchdogs. A command that is not one watchdog's is
a module with its body (a function of the context and its own options that returns how to build
its watchdogs, see `watch_common.WatchCommand`) and one line in `WRITTEN`.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.plumbing import errors, fromspec, watch_common
from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.helptext import tidy
from rtool.app.plumbing.watch_common import Build, WatchCommand
from rtool.core.registry import load
from rtool.core.state import StateDir
from rtool.watchdogs.registry import by_name, configurable, from_config

if TYPE_CHECKING:
    from rtool.watchdogs.base import SpecWatchdog, Watchdog

#: The written commands: name -> "module:function" of its body, listed after the watchdogs'.
WRITTEN: dict[str, str] = {
    "all": "rtool.app.commands.watch_cmd:all_cmd",
}


class _WatchGroup(errors.PolicyGroup):
    """One command per registered watchdog, then the written ones; errors exit 3 UNKNOWN."""

    policy = errors.WATCH

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in self.commands:
            found = _written(name) if name in WRITTEN else command_for(name)
            if found is None:
                return None
            self.commands[name] = found
        return self.commands[name]

    def list_commands(self, ctx: Any) -> list[str]:
        made = configurable()
        return [*made, *(n for n in WRITTEN if n not in made)]


def command_for(name: str) -> Any:
    """The click command `rtool watch NAME` for the registered watchdog `name` (or None)."""
    factory = by_name(name)
    if factory is None or not factory.in_config:
        return None
    declared = fromspec.declare(factory.spec, skip=watch_common.COMMON_NAMES)

    def body(ctx: typer.Context, **given: Any) -> Build:
        config = get_context(ctx).config
        reads = StateDir(config.state.dir, look_only=True)  # reads only (--dry-run writes none)
        base = factory.command_base(config, reads, given)
        if base is None:
            base = _config_entry(factory, config, given)
        specs = fromspec.entries(declared, given, base)
        return lambda t: [factory.from_entries(specs, t, config)]

    doc = inspect.getdoc(factory) or f"The {name} watchdog."
    return fromspec.tag(tidy(WatchCommand(name, declared.params, body, doc)), declared)


def _config_entry(
    factory: type[SpecWatchdog[Any]], config: Any, given: dict[str, Any]
) -> dict[str, Any]:
    """The fields of the `[[watch.NAME]]` entry the command line names (`config_entry_by`)."""
    key = factory.config_entry_by
    if key is None or given.get(key) is None:
        return {}
    for entry in getattr(config.watch, factory.name, None) or []:
        if getattr(entry, key) == given[key]:
            return dict(entry)  # validated values, not their printed form (90s stays 90s)
    return {}


def _written(name: str) -> Any:
    """The command of a written body: its own options as typer reads its signature."""
    body = load(WRITTEN[name])
    holder = typer.Typer(add_completion=False)
    holder.command(name)(body)
    own = typer.main.get_command(holder).params
    return tidy(WatchCommand(name, own, body, inspect.getdoc(body) or ""))


app = typer.Typer(
    cls=_WatchGroup,
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
