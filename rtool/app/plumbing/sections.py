"""The config sections, one line each: `[NAME]` -> the `Section` class that declares its keys and
their defaults, as "module:Class". `rtool.app.plumbing.appconfig.Config` is made from `LINES`, so a
new section is one module and one line here. Reading a section imports that section alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rtool.core.registry import Registry

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

#: The config's sections, in the order `rtool config show` prints them.
LINES: dict[str, str] = {
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

SECTIONS: Registry[type[BaseModel]] = Registry("config section", LINES)


def config_field(path: str) -> tuple[type[BaseModel], FieldInfo]:
    """The model and field of the config key `path` (`cron.grace`, `nodes.preflight.gpus`);
    KeyError when there is none. Imports only that section."""
    first, *rest = path.split(".")
    if first not in SECTIONS or not rest:
        raise KeyError(path)
    model: Any = SECTIONS[first]
    for name in rest[:-1]:  # nested sections: `nodes.preflight`
        info = model.model_fields.get(name)
        model = info.annotation if info is not None else None
        if not (isinstance(model, type) and hasattr(model, "model_fields")):
            raise KeyError(path)
    info = model.model_fields.get(rest[-1])
    if info is None:
        raise KeyError(path)
    return model, info
