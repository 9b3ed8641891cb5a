"""The two sections the core owns: `[state]` and `[slurm]`."""

from __future__ import annotations

from rtool.core.config.types import PositiveDuration, Section


class StateConfig(Section):
    #: Default: $XDG_STATE_HOME/rtool, else ~/.local/state/rtool.
    dir: str | None = None


class SlurmConfig(Section):
    #: Timeout of every squeue/scontrol/sbatch/scancel call.
    timeout: PositiveDuration = 30.0
