"""The built-in defaults (no config file), made one section at a time on first use.

`Config()` would import every feature's section (and every watchdog, for `[watch]`) and build
the validators of about thirty models: a third of `rtool watch disk`'s start-up. Without a
config file there is nothing to validate, so `AppContext.config` (plumbing/context.py) hands out a
`DefaultConfig` instead: `config.watch` imports the `[watch]` section alone and makes its
defaults without building a validator (`model_construct`; a test checks that every section's
constructed defaults equal its validated ones). Anything else asked of it (`model_dump`, ...)
goes to a real `Config()`. With a config file, the whole file is validated as before.
"""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

    from rtool.app.plumbing.appconfig import Config

#: Section name -> "module:class", the fields of `appconfig.Config` (a test checks).
SECTIONS: dict[str, str] = {
    "state": "rtool.core.config.sections:StateConfig",
    "slurm": "rtool.core.config.sections:SlurmConfig",
    "notify": "rtool.notify.config:NotifyConfig",
    "watch": "rtool.watchdogs.registry:WatchConfig",
    "runs": "rtool.runs.config:RunsConfig",
    "cron": "rtool.cron.config:CronConfig",
    "submit": "rtool.slurm_templates.config:SubmitConfig",
    "switches": "rtool.slurm_templates.config:SwitchesConfig",
    "nodes": "rtool.nodes.config:NodesConfig",
    "drill": "rtool.drill.config:DrillConfig",
}


def section_class(name: str) -> type[BaseModel]:
    module, _, attr = SECTIONS[name].partition(":")
    cls: type[BaseModel] = getattr(importlib.import_module(module), attr)
    return cls


def config_field(path: str) -> tuple[type[BaseModel], FieldInfo]:
    """The model and field of the config key `path` (`cron.grace`, `nodes.preflight.gpus`);
    KeyError when there is none. Imports only that section."""
    first, *rest = path.split(".")
    if first not in SECTIONS or not rest:
        raise KeyError(path)
    model = section_class(first)
    for i, name in enumerate(rest):
        info = model.model_fields.get(name)
        if info is None:
            raise KeyError(path)
        if i == len(rest) - 1:
            return model, info
        model = info.annotation  # type: ignore[assignment]
        if not (isinstance(model, type) and hasattr(model, "model_fields")):
            raise KeyError(path)
    raise KeyError(path)  # pragma: no cover


class DefaultConfig:
    """Stands in for `Config()`: each section is imported and made when first read."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in SECTIONS:
            value = section_class(name).model_construct()
            setattr(self, name, value)  # made once
            return value
        return getattr(self.full, name)

    @cached_property
    def full(self) -> Config:
        """The real `Config()` (every section), for what is not a section."""
        from rtool.app.plumbing.appconfig import Config

        return Config()
