"""`[[watch.cron]]` entries are part of `rtool watch all` (real local Slurm)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rtool.core.slurm import Slurm
from rtool.cron import chain
from tests.cron.conftest import CronSetup
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm


def test_watch_all_includes_watch_cron_entries(
    make_cron: Callable[..., CronSetup], cli: Callable[..., Any], slurm: Slurm
) -> None:
    c = make_cron(hourly="1h")
    with c.config.open("a") as fh:  # dir and grace left out: taken from [cron]
        fh.write('\n[[watch.cron]]\n\n[[watch.memory]]\nmax_used = "100%"\nwarn_used = "100%"\n')
    r = cli(*c.args("watch", "all", "--no-notify"))
    assert r.code == 2, r.out + r.err
    lines = r.out.splitlines()
    assert lines[0].startswith("MEMORY OK")
    assert lines[1] == f"CRON CRITICAL - {c.root}: no scheduler job queued or running ({c.name})"

    assert cli(*c.args("cron", "start")).code == 0
    r = cli(*c.args("watch", "all", "--no-notify"))
    assert r.code == 0, r.out + r.err
    assert f"CRON OK - {c.root}: " in r.out

    slurm.scancel(name=c.name)
    wait_for(lambda: not chain.chain_jobs(slurm, c.name), timeout=15, what="the chain to go")
    assert cli(*c.args("watch", "all", "--no-notify")).code == 2


def test_watch_cron_entry_with_its_own_dir_and_grace(tmp_path, cli) -> None:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(f'[[watch.cron]]\ndir = "{tmp_path}/elsewhere"\ngrace = "bogus"\n')
    r = cli("--config", str(cfg), "watch", "all")
    assert r.code in (2, 3) and "watch.cron" in r.err and "grace" in r.err, r.err
