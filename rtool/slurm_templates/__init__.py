"""jinja2 sbatch templates and their renderer.

Python API (used by `rtool submit` and by the cron scheduler)::

    from rtool.slurm_templates import render, render_job, CronSchedulerJob, TrainingJob, SpecError

    # 1. A validated options dataclass per shipped template; constructing it validates every
    #    value (job name, --time, --array, --signal, partition/account/qos, node list, begin)
    #    and raises SpecError (a ValueError) with a one-line message.
    job = CronSchedulerJob(job_name="rtool-cron", command=["rtool", "cron", "tick", "--dir", d],
                           begin="now+60", partition="cpu", time="00:10:00",
                           output="/path/logs/scheduler.%j.log")
    text = render_job(job)                      # -> the batch script (str)
    text = render_job(job, template_dirs=[dir]) # a template of the same name in `dir` wins

    # 2. The shortcut the cron scheduler uses (command: list of words, or a simple command
    #    line that is split with shlex and re-quoted):
    text = render_cron_scheduler(command="rtool cron tick --dir /x", job_name="rtool-cron")

    # 3. The low-level renderer: any template by name, any values.
    text = render("watchdog.slurm.j2", job=WatchdogJob(job_name="w", command=["rtool", "watch",
                  "all"], interval=300, time="1-00:00:00"))

Shipped templates (in this folder, installed as package data):
- `training.slurm.j2`: `rtool submit` (array, signal trap forwarding to the training processes,
  kill/save switches for the shim, auto-requeue). Options: `TrainingJob`.
- `cron_scheduler.slurm.j2`: one tick of the cron scheduler chain. Options: `CronSchedulerJob`.
- `watchdog.slurm.j2`: runs a command every N seconds until the time limit is near.
  Options: `WatchdogJob`.
- `_sbatch_header.j2`, `_rtool_prelude.j2`, `_rtool_launch.j2` (the per-node launch and its
  rendezvous, from `launch.py`): included pieces.

Safety: templates use StrictUndefined, and every printed expression must go through the `q`
filter (shlex.quote; lists give quoted words) or the `sbatch` filter (`#SBATCH` values),
or be an int/bool or trusted `ShellCode`: anything else fails the render (see renderer.py).
"""

from rtool.slurm_templates.jobs import (
    CronSchedulerJob,
    SlurmJob,
    WatchdogJob,
    render_cron_scheduler,
    render_job,
    validate_begin,
)
from rtool.slurm_templates.renderer import (
    ShellCode,
    TemplateError,
    render,
    shell_quote,
)
from rtool.slurm_templates.specs import (
    SignalSpec,
    SpecError,
    validate_array,
    validate_job_name,
    validate_nodelist,
    validate_signal,
    validate_time,
)
from rtool.slurm_templates.training import REQUEUE_EXIT_CODE, TrainingJob

__all__ = [
    "REQUEUE_EXIT_CODE",
    "CronSchedulerJob",
    "ShellCode",
    "SignalSpec",
    "SlurmJob",
    "SpecError",
    "TemplateError",
    "TrainingJob",
    "WatchdogJob",
    "render",
    "render_cron_scheduler",
    "render_job",
    "shell_quote",
    "validate_array",
    "validate_begin",
    "validate_job_name",
    "validate_nodelist",
    "validate_signal",
    "validate_time",
]
