"""The one config schema, assembled from the sections each feature package declares.

Unknown keys are rejected everywhere. Loading and error reporting live in `rtool.core.config`.
"""

from __future__ import annotations

from pathlib import Path

from rtool.core import config as _loader
from rtool.core.config.sections import SlurmConfig, StateConfig
from rtool.core.config.types import Section
from rtool.cron.config import CronConfig
from rtool.drill.config import DrillConfig
from rtool.nodes.config import NodesConfig
from rtool.notify.config import NotifyConfig
from rtool.runs.config import RunsConfig
from rtool.slurm_templates.config import SubmitConfig, SwitchesConfig
from rtool.watchdogs.registry import WatchConfig

__all__ = ["Config", "SlurmConfig", "StateConfig", "load_config", "load_config_text"]


class Config(Section):
    """The whole config. `rtool.app.plumbing.defaults.SECTIONS` names the same sections (a test
    checks)."""

    state: StateConfig = StateConfig()
    slurm: SlurmConfig = SlurmConfig()
    notify: NotifyConfig = NotifyConfig()
    watch: WatchConfig = WatchConfig()
    runs: RunsConfig = RunsConfig()
    cron: CronConfig = CronConfig()
    submit: SubmitConfig = SubmitConfig()
    switches: SwitchesConfig = SwitchesConfig()
    nodes: NodesConfig = NodesConfig()
    drill: DrillConfig = DrillConfig()


def load_config(path: str | Path | None = None) -> Config:
    """The config at `path` (or the one found by the search order), validated."""
    return _loader.load_config(Config, path)


def load_config_text(text: str, source: str = "<config>") -> Config:
    return _loader.load_config_text(Config, text, source)
