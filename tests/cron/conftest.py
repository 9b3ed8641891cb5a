"""Fixtures for the cron tests: a cron folder with a config whose periods are seconds."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rtool.app.plumbing.appconfig import load_config
from rtool.core.slurm import Slurm
from rtool.core.state import StateDir
from rtool.cron import manage
from rtool.cron.store import CronStore, chain_name, resolve_dir


@dataclass
class CronSetup:
    root: Path
    config: Path
    state: Path
    alerts: Path  # the notify log channel's file

    @property
    def name(self) -> str:
        return chain_name(self.root)

    def store(self) -> CronStore:
        return CronStore(StateDir(self.state), self.root)

    def args(self, *rest: str) -> list[str]:
        return ["--config", str(self.config), *rest]


@pytest.fixture
def make_cron(tmp_path: Path, slurm: Slurm) -> Iterator[Callable[..., CronSetup]]:
    """make_cron(hourly="3s", **extra [cron] keys) -> CronSetup; its chain is cancelled after."""
    made: list[CronSetup] = []

    def make(hourly: str = "3s", **extra: str) -> CronSetup:
        n = len(made)
        root = resolve_dir(tmp_path / f"cron{n}")
        manage.init(root)
        state = tmp_path / f"state{n}"
        alerts = tmp_path / f"alerts{n}.log"
        keys = "".join(f'{k} = "{v}"\n' for k, v in extra.items())
        config = tmp_path / f"rtool{n}.toml"
        config.write_text(
            f'[state]\ndir = "{state}"\n'
            f'[cron]\ndir = "{root}"\ngrace = "4s"\n{keys}'
            f'[cron.periods]\nhourly = "{hourly}"\ndaily = "1d"\nweekly = "7d"\n'
            f'[notify.log]\npath = "{alerts}"\n'
        )
        load_config(config)  # fail early on a typo
        setup = CronSetup(root, config, state, alerts)
        made.append(setup)
        return setup

    yield make
    for setup in made:
        with contextlib.suppress(Exception):
            slurm.scancel(name=setup.name)
