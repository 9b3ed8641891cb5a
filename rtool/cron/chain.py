"""The scheduler chain: one Slurm job per tick, each queueing the next at its wall-clock slot.

Side effects (squeue, sbatch, scancel) go through rtool's Slurm layer.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from rtool.core.selfcmd import console_script, rtool_argv
from rtool.core.slurm import ACTIVE_STATES, Slurm, SqueueJob
from rtool.cron.config import CronConfig
from rtool.cron.slots import begin_arg
from rtool.slurm_templates.jobs import render_cron_scheduler

log = logging.getLogger(__name__)


def chain_jobs(slurm: Slurm, name: str) -> list[SqueueJob]:
    """This user's queued or running jobs named `name` (one squeue call; raises SlurmError)."""
    return active_jobs(slurm.squeue(names=[name]), name)  # the Slurm layer: yours only


def active_jobs(jobs: list[SqueueJob], name: str) -> list[SqueueJob]:
    """The jobs named `name` that are still queued or running (pure)."""
    return [j for j in jobs if j.name == name and j.state in ACTIVE_STATES]


def tick_argv(root: Path, slot: float, config_files: Sequence[Path] = ()) -> list[str]:
    """The command the scheduler's job runs: `rtool [--config CFG]... cron tick --dir D --slot S`
    (the config files `rtool cron start` read, absolute, in their order)."""
    argv = rtool_argv()  # absolute: nothing is imported from the cron root
    for path in config_files:
        argv += ["--config", str(path)]
    return [*argv, "cron", "tick", "--dir", str(root), "--slot", f"{slot:.0f}"]


def job_env(config_files: Sequence[Path] = ()) -> dict[str, str]:
    """What a cron job's environment gets besides the tick's: rtool's own `bin/` first on PATH
    (a bare `rtool` in a job is this rtool, even under cron's bare environment) and
    `$RTOOL_CONFIG` naming the tick's config files (`rtool watch all` reads the same ones)."""
    script = console_script()
    path = os.environ.get("PATH") or os.defpath
    env = {"PATH": f"{script.parent}{os.pathsep}{path}" if script else path}
    if config_files:
        env["RTOOL_CONFIG"] = os.pathsep.join(str(p) for p in config_files)
    return env


def resources(cfg: CronConfig) -> list[tuple[str, str]]:
    """The scheduler job's own resources that are set: (option, value)."""
    return [(o, str(v)) for o in ("partition", "account", "qos", "time") if (v := getattr(cfg, o))]


def submit_tick(
    slurm: Slurm,
    cfg: CronConfig,
    root: Path,
    name: str,
    slot: float,
    config_files: Sequence[Path] = (),
) -> str:
    """Queue the tick for `slot`; returns its job id (raises SlurmError). The script comes from
    the `cron_scheduler.slurm.j2` template (every value shell-quoted); the resources go on
    sbatch's command line."""
    script = str(render_cron_scheduler(command=tick_argv(root, slot, config_files), job_name=name))
    (root / "logs").mkdir(parents=True, exist_ok=True)
    args = [
        f"--job-name={name}",
        f"--begin={begin_arg(slot)}",
        f"--chdir={root}",
        f"--output={root / 'logs' / 'scheduler.%j.log'}",
        "--ntasks=1",
        *(f"--{opt}={value}" for opt, value in resources(cfg)),
    ]
    return slurm.sbatch(args, script=script, cwd=str(root)).job_id
