"""Watchdogs: one pure check per module, an explicit registry, and the runner
(the only side effects)."""

# rtool.config's schema imports watchdogs.config: load it first so any import order works.
import rtool.config  # noqa: F401  (isort: skip)
