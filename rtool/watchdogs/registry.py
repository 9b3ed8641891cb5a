"""The explicit list of watchdogs: one line in `LINES` per watchdog (docs/architecture.md).

A line names its watchdog and entry type rather than importing them (`rtool.core.registry`):
the `[watch]` section imports the entry types alone (`ENTRIES`), and a watchdog's module is
imported when it runs (`WATCHDOGS`; `rtool watch disk` does not import the Slurm, cron and run
watchdogs). A test checks that every line agrees with its class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import create_model

from rtool.core.registry import Registry
from rtool.watchdogs.config import WatchBase

if TYPE_CHECKING:
    from rtool.watchdogs.base import SpecWatchdog

#: name -> (its watchdog, the type of its `[[watch.NAME]]` entries or None: not configurable),
#: as "module:Class". Order = order of the status lines.
LINES: dict[str, tuple[str, str | None]] = {
    "job": ("rtool.watchdogs.job:JobWatchdog", "rtool.watchdogs.config:JobWatch"),
    "log": ("rtool.watchdogs.log:LogWatchdog", "rtool.watchdogs.config:LogWatch"),
    "disk": ("rtool.watchdogs.disk:DiskWatchdog", "rtool.watchdogs.config:DiskWatch"),
    "memory": ("rtool.watchdogs.memory:MemoryWatchdog", "rtool.watchdogs.config:MemoryWatch"),
    "run": ("rtool.watchdogs.run:RunWatchdog", "rtool.runs.config:RunWatch"),
    "checkpoint": (
        "rtool.watchdogs.checkpoint.watchdog:CheckpointWatchdog",
        "rtool.watchdogs.config:CheckpointWatch",
    ),
    # [[watch.cron]] entries, completed from [cron]
    "cron": ("rtool.watchdogs.cron_chain:CronWatchdog", "rtool.watchdogs.config:CronWatchEntry"),
}

WATCHDOGS: Registry[type[SpecWatchdog[Any]]] = Registry(
    "watchdog", {name: watchdog for name, (watchdog, _) in LINES.items()}
)
ENTRIES: Registry[type[Any]] = Registry(
    "watch entry", {name: entry for name, (_, entry) in LINES.items() if entry}
)


def configurable() -> list[str]:
    """Names of the watchdogs with `[[watch.NAME]]` entries, in registry order."""
    return ENTRIES.names()


def by_name(name: str) -> type[SpecWatchdog[Any]] | None:
    """The watchdog class `name` (imports its module alone)."""
    return WATCHDOGS.get(name)


def watch_config() -> type[WatchBase]:
    """The `[watch]` section: `timeout` and a list of entries per configurable watchdog."""
    fields: dict[str, Any] = {name: (list[spec], []) for name, spec in ENTRIES.items()}  # type: ignore[valid-type]
    model: type[WatchBase] = create_model("WatchConfig", __base__=WatchBase, **fields)
    model.__doc__ = "[watch] section: " + ", ".join(f"[[watch.{n}]]" for n in fields)
    return model


if TYPE_CHECKING:  # mypy sees the base (its `__getattr__` types the generated fields)
    WatchConfig = WatchBase
else:
    WatchConfig = watch_config()


def from_config(watch: WatchBase, config: Any = None) -> list[SpecWatchdog[Any]]:
    """One watchdog per registered name that has entries in the [watch] section. `config`:
    the whole app config, for watchdogs that read another section (run: [runs], cron: [cron]).
    Only the watchdogs with entries are imported."""
    out = []
    for name in WATCHDOGS:
        entries = list(getattr(watch, name, None) or [])
        if entries and WATCHDOGS[name].in_config:
            out.append(WATCHDOGS[name].from_entries(entries, watch.timeout, config))
    return out
