"""The explicit list of watchdogs. Adding one is a module with a `SpecWatchdog` subclass
(its name, its config entry type, probe and check) and one line in `LINES`: the `[watch]`
config section gets its `[[watch.NAME]]` entries, `rtool watch all` runs it, and `rtool watch
NAME` is generated from its entry's fields unless `rtool/app/commands/watch_cmd.py` writes one.

A line names its watchdog and entry type rather than importing them: the `[watch]` section
imports the entry types alone, and a watchdog's module is imported when it runs (`rtool watch
disk` does not import the Slurm, cron and run watchdogs). `REGISTRY`, the classes themselves,
is imported on first use; a test checks that every line agrees with its class.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import create_model

from rtool.watchdogs.config import WatchBase

if TYPE_CHECKING:
    from rtool.watchdogs.base import SpecWatchdog

Registry = tuple[type["SpecWatchdog[Any]"], ...]


@dataclass(frozen=True)
class Line:
    """One registered watchdog: its name, class and entry type as "module:Class"."""

    name: str
    watchdog: str
    #: The type of its `[[watch.NAME]]` entries; None: not configurable (`in_config` False).
    entry: str | None


#: Order = order of the status lines.
LINES: tuple[Line, ...] = (
    Line("job", "rtool.watchdogs.job:JobWatchdog", "rtool.watchdogs.config:JobWatch"),
    Line("log", "rtool.watchdogs.log:LogWatchdog", "rtool.watchdogs.config:LogWatch"),
    Line("disk", "rtool.watchdogs.disk:DiskWatchdog", "rtool.watchdogs.config:DiskWatch"),
    Line("memory", "rtool.watchdogs.memory:MemoryWatchdog", "rtool.watchdogs.config:MemoryWatch"),
    Line("run", "rtool.watchdogs.run:RunWatchdog", "rtool.runs.config:RunWatch"),
    Line(
        "checkpoint",
        "rtool.watchdogs.checkpoint.watchdog:CheckpointWatchdog",
        "rtool.watchdogs.checkpoint.spec:CheckpointWatch",
    ),
    # [[watch.cron]] entries, completed from [cron]
    Line(
        "cron", "rtool.watchdogs.cron_chain:CronWatchdog", "rtool.watchdogs.config:CronWatchEntry"
    ),
)

if TYPE_CHECKING:
    #: The registered classes, in the order of `LINES` (imported on first use).
    REGISTRY: Registry


def load(where: str) -> Any:
    """The object "module:name" names."""
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":
        registry: Registry = tuple(load(line.watchdog) for line in LINES)
        globals()["REGISTRY"] = registry  # imported once (a test may replace it)
        return registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _imported() -> Registry | None:
    """REGISTRY if it was imported (or replaced) already, else None."""
    found: Registry | None = globals().get("REGISTRY")
    return found


def configurable() -> list[str]:
    """Names of the watchdogs with `[[watch.NAME]]` entries, in registry order."""
    registry = _imported()
    if registry is not None:
        return [w.name for w in registry if w.in_config]
    return [line.name for line in LINES if line.entry]


def by_name(name: str, registry: Registry | None = None) -> type[SpecWatchdog[Any]] | None:
    """The watchdog class `name` (imports its module alone)."""
    registry = registry or _imported()
    if registry is not None:
        return next((w for w in registry if w.name == name), None)
    line = next((x for x in LINES if x.name == name), None)
    return None if line is None else load(line.watchdog)  # type: ignore[no-any-return]


def watch_config(registry: Registry | None = None) -> type[WatchBase]:
    """The `[watch]` section: `timeout` and a list of entries per configurable watchdog."""
    if registry is not None:
        entries = [(w.name, w.spec) for w in registry if w.in_config]
    else:
        entries = [(line.name, load(line.entry)) for line in LINES if line.entry]
    fields: dict[str, Any] = {name: (list[spec], []) for name, spec in entries}  # type: ignore[valid-type]
    model: type[WatchBase] = create_model("WatchConfig", __base__=WatchBase, **fields)
    model.__doc__ = "[watch] section: " + ", ".join(f"[[watch.{n}]]" for n in fields)
    return model


if TYPE_CHECKING:  # mypy sees the base (its `__getattr__` types the generated fields)
    WatchConfig = WatchBase
else:
    WatchConfig = watch_config()


def build(name: str, specs: list[Any], timeout: float) -> SpecWatchdog[Any]:
    factory = by_name(name)
    if factory is None:
        raise KeyError(name)
    return factory(specs, timeout)


def from_config(
    watch: WatchBase, config: Any = None, registry: Registry | None = None
) -> list[SpecWatchdog[Any]]:
    """One watchdog per registered name that has entries in the [watch] section. `config`:
    the whole app config, for watchdogs that read another section (run: [runs], cron: [cron]).
    Only the watchdogs with entries are imported."""
    registry = registry or _imported()
    names = [w.name for w in registry] if registry is not None else [x.name for x in LINES]
    out = []
    for name in names:
        entries = list(getattr(watch, name, None) or [])
        factory = by_name(name, registry) if entries else None
        if factory is not None and factory.in_config:
            out.append(factory.from_entries(entries, watch.timeout, config))
    return out
