"""`rtool watch job|log|disk|memory|all`: monitoring-plugin style watchdogs.

Each command builds watchdogs from its flags (no config needed) and hands them to
`rtool.watchdogs.runner.run_watch`, which prints one status line per check and exits 0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN. A registered watchdog without a command written here gets
a generated one (watch_auto.py); write one only to tune its flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.commands import errors
from rtool.app.commands.watch_common import Build, command
from rtool.app.commands.watch_common import make_spec as _spec
from rtool.app.context import get_context
from rtool.core.errors import UsageError

if TYPE_CHECKING:
    from rtool.watchdogs.base import Watchdog


class _WatchGroup(errors.PolicyGroup):
    """The written commands, then one generated per registered watchdog (watch_auto.py)."""

    def get_command(self, ctx: Any, name: str) -> Any:
        from rtool.app.commands import watch_auto

        found = super().get_command(ctx, name)
        return found if found is not None else watch_auto.command_for(name)

    def list_commands(self, ctx: Any) -> list[str]:
        from rtool.app.commands import watch_auto

        written = list(super().list_commands(ctx))
        return written + watch_auto.registered(set(written))


app = errors.group(
    errors.WATCH,
    base=_WatchGroup,
    help="Watchdogs for a training run: job, log, disk, memory, run, cron, or all from the "
    "config.\n\n"
    "Exit codes like a monitoring plugin: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n\n"
    "Example: rtool watch disk /scratch --max-used 80% --tee logs/train.log",
    no_args_is_help=True,
)


@app.command("job")
@command
def job_cmd(
    ctx: typer.Context,
    name: list[str] = typer.Option(..., "--name", help="Job name (repeat for several)."),
    regex: bool = typer.Option(False, "--regex", help="Names are regular expressions."),
    user: list[str] = typer.Option([], "--user", help="Only jobs of this user (repeatable)."),
    group: str | None = typer.Option(None, "--group", help="Only jobs of this unix group."),
    partition: str | None = typer.Option(None, "--partition", help="Only this partition."),
    max_pending: str = typer.Option("24h", "--max-pending", help="Pending longer -> WARNING."),
) -> Build:
    """Is the training job running or queued? One squeue call for all names.

    RUNNING is OK; PENDING is OK unless held, never satisfiable or pending past
    --max-pending; neither running nor queued is CRITICAL; squeue failing is UNKNOWN.

    Example: rtool watch job --name train-10b --user alice --max-pending 6h
    """
    from rtool.watchdogs.config import JobWatch
    from rtool.watchdogs.job import JobWatchdog

    specs = [
        _spec(
            JobWatch,
            name=n,
            regex=regex,
            users=user,
            group=group,
            partition=partition,
            max_pending=max_pending,
        )
        for n in name
    ]
    return lambda t: [JobWatchdog(specs, t)]


@app.command("log")
@command
def log_cmd(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="Log file or glob (newest match wins)."),
    stale: str = typer.Option("30m", "--stale", help="Not written for longer -> CRITICAL."),
    job_name: str | None = typer.Option(
        None, "--job-name", help="Stale while this job is not running: OK with a note."
    ),
    heartbeat: str | None = typer.Option(
        None, "--heartbeat", help="Heartbeat file of the training shim (sharper signal)."
    ),
    dump_stacks: bool = typer.Option(
        False, "--dump-stacks", help="On a hang, attach a py-spy dump to the alert."
    ),
    pid: int | None = typer.Option(None, "--pid", help="Process to dump (else heartbeat/job)."),
    on_hang: str = typer.Option(
        "none", "--on-hang", help="none, requeue or signal:USR1 (once per hang)."
    ),
) -> Build:
    """Has the training stopped writing its log (or heartbeat)?

    Example: rtool watch log 'logs/train-*.out' --stale 30m --job-name train-10b --on-hang requeue
    """
    from rtool.watchdogs.config import LogWatch
    from rtool.watchdogs.log import LogWatchdog

    spec = _spec(
        LogWatch,
        path=path,
        stale=stale,
        job_name=job_name,
        heartbeat=heartbeat,
        dump_stacks=dump_stacks,
        pid=pid,
        on_hang=on_hang,
    )
    return lambda t: [LogWatchdog([spec], t)]


@app.command("disk")
@command
def disk_cmd(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(..., help="Paths on the partitions the run needs."),
    max_used: str = typer.Option("90%", "--max-used", help="Used above -> CRITICAL."),
    warn_used: str | None = typer.Option(None, "--warn-used", help="Used above -> WARNING."),
    min_free: str | None = typer.Option(None, "--min-free", help="Free below -> CRITICAL."),
    max_inodes_used: str | None = typer.Option(None, "--max-inodes-used", help="e.g. 90%."),
    min_free_inodes: int | None = typer.Option(None, "--min-free-inodes", help="e.g. 100000."),
    usable: str = typer.Option("100%", "--usable", help="Share of the size that is usable."),
    runway: str | None = typer.Option(None, "--runway", help="WARNING when full within."),
    trend_min_span: str = typer.Option("1h", "--trend-min-span", help="History for a trend."),
    quota_cmd: str | None = typer.Option(None, "--quota-cmd", help="e.g. 'lfs quota -u me /fs'."),
    quota_format: str = typer.Option("simple", "--quota-format", help="lfs, mmlsquota, simple."),
) -> Build:
    """Space and inodes on every partition the run needs (a hung mount never hangs rtool).

    Example: rtool watch disk /scratch /home --max-used 80% --min-free-inodes 100000 --runway 48h
    """
    from rtool.watchdogs.config import DiskWatch
    from rtool.watchdogs.disk import DiskWatchdog

    specs = [
        _spec(
            DiskWatch,
            path=p,
            max_used=max_used,
            warn_used=warn_used,
            min_free=min_free,
            max_inodes_used=max_inodes_used,
            min_free_inodes=min_free_inodes,
            usable=usable,
            runway=runway,
            trend_min_span=trend_min_span,
            quota_cmd=quota_cmd,
            quota_format=quota_format,
        )
        for p in paths
    ]
    return lambda t: [DiskWatchdog(specs, t)]


@app.command("memory")
@command
def memory_cmd(
    ctx: typer.Context,
    max_used: str = typer.Option("95%", "--max-used", help="Node RAM used above -> CRITICAL."),
    warn_used: str = typer.Option("90%", "--warn-used", help="Node RAM used above -> WARNING."),
    pid: list[int] = typer.Option([], "--pid", help="Watch the RSS growth of this process."),
    job: str | None = typer.Option(None, "--job", help="Watch a Slurm job's processes here."),
    gpu: bool = typer.Option(False, "--gpu", help="Check GPU memory (nvidia-smi) if present."),
    runway: str = typer.Option("24h", "--runway", help="WARNING when RSS growth fills RAM within."),
    trend_min_span: str = typer.Option("30m", "--trend-min-span", help="History for a trend."),
) -> Build:
    """Node RAM and swap, RSS growth of processes or a job, GPU memory.

    Example: rtool watch memory --max-used 90% --job $SLURM_JOB_ID --gpu
    """
    from rtool.watchdogs.config import MemoryWatch
    from rtool.watchdogs.memory import MemoryWatchdog

    warn = warn_used if warn_used is not None else max_used
    spec = _spec(
        MemoryWatch,
        max_used=max_used,
        warn_used=warn,
        pids=pid,
        job=job,
        gpu=gpu,
        runway=runway,
        trend_min_span=trend_min_span,
    )
    return lambda t: [MemoryWatchdog([spec], t)]


@app.command("cron")
@command
def cron_cmd(
    ctx: typer.Context,
    directory: Path | None = typer.Option(
        None, "--dir", help="The cron folder (default: cron.dir in the config)."
    ),
    grace: str | None = typer.Option(
        None, "--grace", help="Allowed delay after the tick period (default: cron.grace, 10m)."
    ),
) -> Build:
    """Who watches the watchman: is the `rtool cron` chain alive?

    CRITICAL when its last tick is older than the tick period plus the grace, or when no
    scheduler job is queued or running; UNKNOWN when squeue fails. Run it from a login
    node's real crontab where there is one.

    Example: rtool watch cron --dir ~/rtool-cron --grace 15m
    """
    from rtool.core.units import UnitError, parse_duration
    from rtool.cron.store import resolve_dir
    from rtool.watchdogs.cron import CronWatchdog, spec_from_config

    cfg = get_context(ctx).config.cron
    try:
        g = parse_duration(grace) if grace is not None else None
    except UnitError as exc:
        raise UsageError(f"--grace: {exc}") from None
    spec = spec_from_config(cfg, resolve_dir(directory or cfg.dir), g)
    return lambda t: [CronWatchdog([spec], t)]


@app.command("all")
@command
def all_cmd(
    ctx: typer.Context,
) -> Build:
    """Every [[watch.job]], [[watch.log]], [[watch.disk]], [[watch.memory]], [[watch.run]]
    and [[watch.cron]] entry of the config in one sweep; the worst status is the exit code.

    Example: rtool --config rtool.toml watch all --tee logs/train.log
    """
    from rtool.watchdogs.registry import from_config

    cfg = get_context(ctx).config

    def build(t: float) -> list[Watchdog]:
        return [*from_config(cfg.watch.model_copy(update={"timeout": t}), cfg)]

    return build


@app.command("run")
@command
def run_cmd(
    ctx: typer.Context,
    run: str = typer.Argument(..., help="The run, by its run name or its jobs' name."),
    job_name: str | None = typer.Option(None, "--job-name", help="Its jobs' name (default RUN)."),
    heartbeat: str | None = typer.Option(None, "--heartbeat", help="The shim's heartbeat file."),
    log: str | None = typer.Option(
        None, "--log", help="The attempt's log, Slurm-style: logs/train-%A_%a.out (%j %A %a %x)."
    ),
    total_steps: int | None = typer.Option(None, "--total-steps", help="Enables the budget."),
    crash_loop: int | None = typer.Option(
        None, "--crash-loop", help="Bad attempts in a row that make a crash loop (default 2)."
    ),
    short: str | None = typer.Option(
        None, "--short", help="An attempt dying within this of its start is bad (default 5m)."
    ),
    on_crash_loop: str | None = typer.Option(
        None, "--on-crash-loop", help="hold (default: scontrol hold the rest) or none."
    ),
    stalled: str | None = typer.Option(
        None, "--stalled", help="Highest step not grown this long while running (default 2h)."
    ),
    restart_storm: int | None = typer.Option(
        None, "--restart-storm", help="More attempts than this in an hour -> WARNING (6)."
    ),
    no_accounting: bool = typer.Option(
        False, "--no-accounting", help="Do not ask sacct (degraded mode)."
    ),
) -> Build:
    """Is the run progressing across its attempts (array tasks, requeues, chained jobs)?

    CRITICAL crash loop (and the rest of the array held), stalled, or exhausted without
    finished(); WARNING budget or restart storm. A watch.run config entry of the same name
    gives the defaults; flags override it.

    Example: rtool watch run llama-7b --heartbeat ckpt/heartbeat.json --log 'logs/llama-%A_%a.out'
    """
    flags = {
        "job_name": job_name,
        "heartbeat": heartbeat,
        "log": log,
        "total_steps": total_steps,
        "crash_loop": crash_loop,
        "short": short,
        "on_crash_loop": on_crash_loop,
        "stalled": stalled,
        "restart_storm": restart_storm,
        "accounting": "off" if no_accounting else None,
    }
    return _run_build(ctx, run, flags)


def _run_build(ctx: typer.Context, run: str, flags: Mapping[str, object]) -> Build:
    """The run watchdog: the [[watch.run]] entry of that name, the flags over it."""
    from rtool.runs.config import RunWatch
    from rtool.runs.names import watch_base
    from rtool.watchdogs.run import RunWatchdog

    app_ctx = get_context(ctx)
    cfg = app_ctx.config
    base = watch_base(app_ctx.state, run, cfg.watch.run)  # by run or job name
    spec = _spec(RunWatch, **{**base, **{k: v for k, v in flags.items() if v is not None}})
    return lambda t: [RunWatchdog([spec], t).configure(cfg)]
