"""The one config schema, made from the sections each feature package declares.

`rtool.app.plumbing.sections.LINES` lists the sections, one line each; `Config` has one field per
section, defaulting to that section's own defaults. Unknown keys are rejected everywhere.
Loading and error reporting live in `rtool.core.config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import create_model

from rtool.app.plumbing.sections import SECTIONS
from rtool.core import config as _loader
from rtool.core.config.types import Section

__all__ = ["Config", "config_model", "load_config", "load_config_text"]


def config_model() -> type[Section]:
    """The whole config: `[NAME]` for every registered section, with its defaults."""
    fields: dict[str, Any] = {name: (cls, cls()) for name, cls in SECTIONS.items()}
    model: type[Section] = create_model("Config", __base__=Section, **fields)
    model.__doc__ = "The whole config: " + ", ".join(f"[{name}]" for name in fields) + "."
    return model


if TYPE_CHECKING:

    class Config(Section):
        """What mypy sees: a section is typed where it is used (`cfg: NotifyConfig`)."""

        def __getattr__(self, name: str) -> Any: ...

else:
    Config = config_model()


def load_config(path: str | Path | None = None) -> Config:
    """The config at `path` (or the one found by the search order), validated."""
    return _loader.load_config(Config, path)


def load_config_text(text: str, source: str = "<config>") -> Config:
    return _loader.load_config_text(Config, text, source)
