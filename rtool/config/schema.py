"""The one config schema: every section, unknown keys rejected everywhere."""

from __future__ import annotations

from cron.config import CronConfig
from notify.config import NotifyConfig
from rtool.config.types import Duration, Section
from slurm_templates.config import SubmitConfig, SwitchesConfig
from watchdogs.config import WatchConfig


class StateConfig(Section):
    #: Default: $XDG_STATE_HOME/rtool, else ~/.local/state/rtool.
    dir: str | None = None


class SlurmConfig(Section):
    #: Timeout of every squeue/scontrol/sbatch/scancel call.
    timeout: Duration = 30.0


class Config(Section):
    state: StateConfig = StateConfig()
    slurm: SlurmConfig = SlurmConfig()
    notify: NotifyConfig = NotifyConfig()
    watch: WatchConfig = WatchConfig()
    cron: CronConfig = CronConfig()
    submit: SubmitConfig = SubmitConfig()
    switches: SwitchesConfig = SwitchesConfig()
