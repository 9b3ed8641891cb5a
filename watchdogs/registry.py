"""The explicit list of watchdogs. Adding one is a module with a `SpecWatchdog` subclass
(its name, its config entry type, probe and check) and one line in `REGISTRY`: the `[watch]`
config section gets its `[[watch.NAME]]` entries, `rtool watch all` runs it, and `rtool watch
NAME` is generated from its entry's fields unless `rtool/commands/watch_cmd.py` writes one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import create_model

from watchdogs.base import SpecWatchdog
from watchdogs.config import WatchBase
from watchdogs.cron import CronWatchdog
from watchdogs.disk import DiskWatchdog
from watchdogs.job import JobWatchdog
from watchdogs.log import LogWatchdog
from watchdogs.memory import MemoryWatchdog
from watchdogs.run import RunWatchdog

Registry = tuple[type[SpecWatchdog[Any]], ...]

#: Order = order of the status lines.
REGISTRY: Registry = (
    JobWatchdog,
    LogWatchdog,
    DiskWatchdog,
    MemoryWatchdog,
    RunWatchdog,
    CronWatchdog,  # [[watch.cron]] entries, completed from [cron]
)


def by_name(name: str, registry: Registry | None = None) -> type[SpecWatchdog[Any]] | None:
    return next((w for w in registry or REGISTRY if w.name == name), None)


def watch_config(registry: Registry = REGISTRY) -> type[WatchBase]:
    """The `[watch]` section: `timeout` and a list of entries per configurable watchdog."""
    fields: dict[str, Any] = {
        w.name: (list[w.spec], [])  # type: ignore[name-defined]
        for w in registry
        if w.in_config
    }
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
    the whole app config, for watchdogs that read another section (run: [runs], cron: [cron])."""
    out = []
    for factory in registry or REGISTRY:
        entries = list(getattr(watch, factory.name, None) or []) if factory.in_config else []
        if entries:
            out.append(factory.from_entries(entries, watch.timeout, config))
    return out
