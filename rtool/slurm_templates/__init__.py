"""jinja2 sbatch templates, their validated options and their renderer.

- `jobs.py`: one validated options dataclass per shipped template; constructing it validates
  every value (job name, --time, --array, --signal, partition/account/qos, node list, begin)
  and raises `specs.SpecError` (a ValueError) with a one-line message. `render_job(job,
  template_dirs)` renders it (a template of the same name in a user folder wins);
  `render_cron_scheduler` is the cron scheduler's shortcut.
- `renderer.py`: the low-level renderer (any template by name) and its safety rules.
- `request.py` and `submit.py`: `rtool submit`'s options and the `TrainingJob` made of them.

Shipped templates (in this folder, installed as package data):
- `training.slurm.j2`: `rtool submit` (array, signal trap forwarding to the training processes,
  kill/save switches for the shim, auto-requeue). Options: `training.TrainingJob`.
- `cron_scheduler.slurm.j2`: one tick of the cron scheduler chain. Options: `CronSchedulerJob`.
- `watchdog.slurm.j2`: runs a command every N seconds until the time limit is near.
  Options: `WatchdogJob`.
- `_sbatch_header.j2`, `_rtool_prelude.j2`, `_rtool_launch.j2` (the per-node launch and its
  rendezvous, from `launch.py`): included pieces.
"""
