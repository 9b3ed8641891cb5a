"""`rtool watch NAME` for every registered watchdog, made from its declaration: one parameter
per field of its config entry (`rtool.app.plumbing.fromspec`: required fields are arguments, the
others options, with the field's help and default), the class docstring as the help, plus
--json, --no-notify, --tee, --timeout and --prom-textfile. Made when first asked for, so the
CLI's start-up does not import the watchdogs."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.plumbing import fromspec, watch_common
from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.helptext import tidy
from rtool.core.state import StateDir
from rtool.watchdogs.registry import by_name, configurable

if TYPE_CHECKING:
    from rtool.watchdogs.base import SpecWatchdog


def registered() -> list[str]:
    """Names of the configurable registered watchdogs, in registry order."""

    return configurable()


def command_for(name: str) -> Any:
    """The click command `rtool watch NAME` for the registered watchdog `name` (or None)."""

    factory = by_name(name)
    if factory is None or not factory.in_config:
        return None
    declared = fromspec.declare(factory.spec, skip=watch_common.COMMON_NAMES)

    def body(ctx: typer.Context, **given: Any) -> watch_common.Build:
        config = get_context(ctx).config
        reads = StateDir(config.state.dir, look_only=True)  # reads only (--dry-run writes none)
        base = factory.command_base(config, reads, given)
        if base is None:
            base = _config_entry(factory, config, given)
        specs = fromspec.entries(declared, given, base)
        return lambda t: [factory.from_entries(specs, t, config)]

    doc = inspect.getdoc(factory) or f"The {name} watchdog."
    command = watch_common.WatchCommand(name, declared.params, body, doc)
    return fromspec.tag(tidy(command), declared)


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
