"""The explicit list of watchdogs: name -> class built from its config entries.

Adding one (e.g. `cron`) is: a module with a class satisfying `watchdogs.base.Watchdog`,
a `list[<Spec>]` field named like it in `watchdogs.config.WatchConfig`, one line here, and
one `@app.command` in `rtool/commands/watch_cmd.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cron.config import CronConfig
from watchdogs.base import Watchdog
from watchdogs.config import WatchConfig
from watchdogs.cron import CronWatchdog, specs_from_entries
from watchdogs.disk import DiskWatchdog
from watchdogs.job import JobWatchdog
from watchdogs.log import LogWatchdog
from watchdogs.memory import MemoryWatchdog
from watchdogs.run import RunWatchdog

#: name -> factory(specs, default timeout). Order = order of the status lines.
REGISTRY: dict[str, Callable[[list[Any], float], Watchdog]] = {
    "job": JobWatchdog,
    "log": LogWatchdog,
    "disk": DiskWatchdog,
    "memory": MemoryWatchdog,
    "run": RunWatchdog,
    "cron": CronWatchdog,  # [[watch.cron]] entries, completed from [cron] (see from_config)
}


def build(name: str, specs: list[Any], timeout: float) -> Watchdog:
    return REGISTRY[name](specs, timeout)


def from_config(watch: WatchConfig, cron: CronConfig | None = None) -> list[Watchdog]:
    """One watchdog per registered name that has entries in the [watch] section.
    `[[watch.cron]]` entries take their folder, tick period and grace defaults from `cron`."""
    out = []
    for name, factory in REGISTRY.items():
        specs = list(getattr(watch, name, None) or [])
        if name == "cron":
            specs = specs_from_entries(specs, cron or CronConfig())
        if specs:
            out.append(factory(specs, watch.timeout))
    return out
