"""What every command needs, built lazily from the global options: config, state dir, Slurm."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

if TYPE_CHECKING:
    from rtool.app.plumbing.appconfig import Config
    from rtool.core.config import Layered
    from rtool.core.slurm import Slurm
    from rtool.core.state import StateDir


@dataclass
class AppContext:
    #: `--config PATH` (repeatable): exactly these files, in order; none given: the layers found.
    config_paths: tuple[Path, ...] = ()
    verbose: int = 0
    quiet: bool = False
    debug: bool = False
    #: `--no-config`: the built-in defaults, whatever $RTOOL_CONFIG or ./rtool.toml say.
    no_config: bool = False

    @property
    def config_path(self) -> Path | None:
        """The last (winning) `--config` given, if any."""
        return self.config_paths[-1] if self.config_paths else None

    @cached_property
    def config_files(self) -> list[Path]:
        """The config files read, in order, later ones winning ([]: built-in defaults)."""
        from rtool.core.config import config_files

        return [] if self.no_config else config_files(self.config_paths)

    @cached_property
    def loaded(self) -> tuple[Config, Layered]:
        """The config files merged and validated whole, and where each value came from; with
        none, the defaults (made as they are read) and nothing read."""
        from rtool.core.config import Layered

        if not self.config_files:
            from rtool.app.plumbing.defaults import DefaultConfig

            return cast("Config", DefaultConfig()), Layered()
        from rtool.app.plumbing.appconfig import Config
        from rtool.core.config import load_layers

        return load_layers(Config, self.config_files)

    @cached_property
    def config(self) -> Config:
        return self.loaded[0]

    @property
    def layered(self) -> Layered:
        return self.loaded[1]

    def config_argv(self) -> list[str]:
        """The global options that make a child rtool (a cron tick, the batch script's
        pre-flight) read exactly the files this one read: `--config ABS` per file, in order,
        or `--no-config` when there was none (never a file found later where it runs)."""
        if not self.config_files:
            return ["--no-config"]
        return [arg for f in self.config_files for arg in ("--config", str(f.resolve()))]

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
