"""[watch] config section (owned by the watchdogs package)."""

from __future__ import annotations

from rtool.config.types import Duration, Section


class WatchConfig(Section):
    timeout: Duration = 10.0
