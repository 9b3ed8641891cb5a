"""What every command needs, built lazily from the global options: config, state dir, Slurm."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

if TYPE_CHECKING:
    from rtool.app.appconfig import Config
    from rtool.core.slurm import Slurm
    from rtool.core.state import StateDir


@dataclass
class AppContext:
    config_path: Path | None = None
    verbose: int = 0
    quiet: bool = False
    debug: bool = False
    #: `--no-config`: the built-in defaults, whatever $RTOOL_CONFIG or ./rtool.toml say.
    no_config: bool = False

    @cached_property
    def config(self) -> Config:
        """The config file, validated whole; with none, the defaults (made as they are read)."""
        from rtool.core.config import find_config_path

        if self.no_config or find_config_path(self.config_path) is None:
            from rtool.app.defaults import DefaultConfig

            return cast("Config", DefaultConfig())
        from rtool.app.appconfig import load_config

        return load_config(self.config_path)

    @cached_property
    def state(self) -> StateDir:
        from rtool.core.state import StateDir

        return StateDir(self.config.state.dir)

    @cached_property
    def slurm(self) -> Slurm:
        from rtool.core.slurm import Slurm

        return Slurm(timeout=self.config.slurm.timeout)


def get_context(ctx: typer.Context) -> AppContext:
    """The AppContext of the running command (a default one when called outside the CLI)."""
    obj = ctx.find_root().obj
    if not isinstance(obj, AppContext):
        obj = AppContext()
        ctx.find_root().obj = obj
    return obj
