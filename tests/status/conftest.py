"""Fixtures for `rtool status` tests: a config + state dir, and a FUSE mount whose lookups hang."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rtool.app.plumbing.appconfig import load_config
from rtool.core.state import StateDir
from tests.conftest import CliResult
from tests.helpers import fuse_server

HUNG_FUSE = str(Path(__file__).with_name("hung_getattr_fuse.py"))


@dataclass
class Setup:
    dir: Path
    config: Path
    state_path: Path
    alerts_log: Path
    cli: Callable[..., CliResult]

    @property
    def state(self) -> StateDir:
        return StateDir(self.state_path)

    def loaded(self) -> Any:
        return load_config(self.config)

    def run(self, *args: str) -> CliResult:
        return self.cli("--config", str(self.config), *args)

    def status(self, *args: str) -> dict[str, Any]:
        res = self.run("status", "--json", *args)
        assert res.code == 0, res.err
        data: dict[str, Any] = json.loads(res.out)
        return data

    def screen(self, *args: str) -> str:
        res = self.run("status", *args)
        assert res.code == 0, res.err
        return res.out


@pytest.fixture
def make_setup(
    tmp_path: Path, cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], Setup]:
    """make_setup(extra_toml) -> Setup: a config with its own state dir and a log channel file;
    the current folder is a fresh `run/` folder (where the default switch files live)."""

    def make(extra: str = "") -> Setup:
        run = tmp_path / "run"
        run.mkdir(exist_ok=True)
        monkeypatch.chdir(run)
        state, alerts = tmp_path / "state", tmp_path / "alerts.log"
        config = tmp_path / "rtool.toml"
        config.write_text(
            f'[state]\ndir = "{state}"\n[cron]\ndir = "{tmp_path / "cron"}"\n'
            f'[notify.log]\npath = "{alerts}"\n{extra}'
        )
        load_config(config)  # fail early on a typo
        return Setup(tmp_path, config, state, alerts, cli)

    return make


@pytest.fixture
def hung_lookup_mount(tmp_path: Path) -> Iterator[Path]:
    """A real FUSE mount where any stat below the root never answers. Cleanup: kill the server
    (which fails the pending lookups), then lazily unmount."""
    with fuse_server(HUNG_FUSE, tmp_path / "hung") as point:
        yield point
