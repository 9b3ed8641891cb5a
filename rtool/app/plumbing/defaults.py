"""The built-in defaults (no config file), made one section at a time on first use.

`Config()` imports every feature's section and builds the validators of about thirty models: a
third of `rtool watch disk`'s start-up. Without a config file there is nothing to validate, so
`AppContext.config` is a `DefaultConfig`: each section is made without a validator
(`model_construct`; a test checks these equal the validated defaults); anything else asked of
it goes to a real `Config()`.
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
