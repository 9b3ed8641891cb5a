"""Watchdogs: one pure check per module, an explicit registry, and the runner
(the only side effects)."""
