"""The scrontab line rtool installs works under cron's bare environment (issue 30, point 6): it
carries the absolute rtool and every config file, and a cron job's bare `rtool` is the same
rtool reading the same config. Run with `env -i` from `/`, as cron would."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from rtool.app.plumbing.appconfig import load_config
from rtool.core.selfcmd import rtool_argv
from rtool.cron import manage, scron
from rtool.cron.store import chain_key, chain_name, resolve_dir


def test_an_installed_scrontab_line_runs_under_env_minus_i(tmp_path: Path) -> None:
    root = resolve_dir(tmp_path / "cron")
    manage.init(root)
    out = tmp_path / "seen.txt"
    job = root / "cron.hourly" / "where.sh"
    job.write_text(f"#!/bin/sh\nrtool config path > {out}\ncommand -v rtool >> {out}\n")
    job.chmod(0o755)
    state, alerts = tmp_path / "state", tmp_path / "alerts.log"
    user, project = tmp_path / "user.toml", tmp_path / "project.toml"
    user.write_text(f'[state]\ndir = "{state}"\n[notify.log]\npath = "{alerts}"\n')
    project.write_text(f'[cron]\ndir = "{root}"\ntick = "1m"\n[cron.periods]\nhourly = "2s"\n')
    files = (user, project)
    cfg = load_config(files)
    block = scron.block(cfg.cron, root, chain_name(root), chain_key(root), files)
    (line,) = [x for x in block.splitlines() if x and not x.startswith("#")]
    command = line.split(" ", 5)[5]  # after the five time fields
    assert f"{rtool_argv()[0]}" in command and "--no-chain" in command
    assert f"--config {user} --config {project}" in command

    def tick() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["env", "-i", "/bin/sh", "-c", command],
            cwd="/",
            capture_output=True,
            text=True,
            timeout=120,
        )

    first = tick()  # sets the slots; the hourly (2 s) slot comes next
    assert first.returncode == 0, first.stdout + first.stderr
    time.sleep(2.5)
    second = tick()
    assert second.returncode == 0, second.stdout + second.stderr
    assert "cron.hourly/where.sh: ok" in second.stdout, second.stdout + second.stderr
    seen = out.read_text().splitlines()
    assert seen == [str(user), str(project), rtool_argv()[0]], seen
    assert (state / "cron" / chain_key(root) / "heartbeat.json").is_file()
