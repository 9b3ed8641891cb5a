"""The built-in defaults (no config file), made one section at a time on first use.

`Config()` would import every feature's section (and every watchdog's entry type, for
`[watch]`) and build the validators of about thirty models: a third of `rtool watch disk`'s
start-up. Without a config file there is nothing to validate, so
`rtool.app.plumbing.context.AppContext.config` hands out a `DefaultConfig` instead: `config.watch`
imports the `[watch]` section alone and makes its defaults without building a validator
(`model_construct`; a test checks that every section's constructed defaults equal its validated
ones). Anything else asked of it (`model_dump`, ...) goes to a real `Config()`. With a config
file, the whole file is validated as before.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from rtool.app.plumbing.sections import SECTIONS

if TYPE_CHECKING:
    from rtool.app.plumbing.appconfig import Config


class DefaultConfig:
    """Stands in for `Config()`: each section is imported and made when first read."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in SECTIONS:
            value = SECTIONS[name].model_construct()
            setattr(self, name, value)  # made once
            return value
        return getattr(self.full, name)

    @cached_property
    def full(self) -> Config:
        """The real `Config()` (every section), for what is not a section."""
        from rtool.app.plumbing.appconfig import Config

        return Config()
