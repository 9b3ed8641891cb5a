"""`rtool submit`, `rtool stop`, `rtool save`: render a training job from a template and submit
it; touch the kill or save switch of a run (see docs/submit.md)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rtool.context import get_context
from rtool.core.errors import RtoolError, UsageError

if TYPE_CHECKING:
    from rtool.context import AppContext
    from slurm_templates.training import TrainingJob


def submit(
    ctx: typer.Context,
    script: Path = typer.Argument(..., help="A Python training script, or a .slurm batch script."),
    extra: list[str] | None = typer.Argument(None, help="Extra sbatch arguments (after --)."),
    array: str | None = typer.Option(None, "--array", help="Array spec, e.g. 1-10%1."),
    nodes: int | None = typer.Option(None, "--nodes", help="Number of nodes."),
    gpus_per_node: int | None = typer.Option(None, "--gpus-per-node", help="GPUs per node."),
    time: str | None = typer.Option(None, "--time", help="Time limit: 20:00:00, 2-00:00:00, 20h."),
    signal: str | None = typer.Option(
        None, "--signal", help="[B:][R:]SIG@SECONDS before the time limit (default B:USR1@600)."
    ),
    requeue: bool | None = typer.Option(
        None, "--requeue/--no-requeue", help="Let Slurm requeue the job (node failure, preemption)."
    ),
    after: str | None = typer.Option(None, "--after", help="Start after this job ends (afterany)."),
    after_name: str | None = typer.Option(
        None, "--after-name", help="Start after your running or pending job of this name."
    ),
    job_name: str | None = typer.Option(
        None, "--job-name", help="Job name (default: script name)."
    ),
    partition: str | None = typer.Option(None, "--partition", help="Partition."),
    account: str | None = typer.Option(None, "--account", help="Account."),
    exclude: str | None = typer.Option(None, "--exclude", help="Nodes to avoid: node[01-03]."),
    kill_switch: str | None = typer.Option(
        None, "--kill-switch", help="Kill switch path (default: ./kill-switch or [switches] kill)."
    ),
    save_switch: str | None = typer.Option(
        None, "--save-switch", help="Save switch path (default: ./save-switch or [switches] save)."
    ),
    template: Path | None = typer.Option(None, "--template", help="Your own training template."),
    launcher: str | None = typer.Option(
        None, "--launcher", help='Runs the script under srun, e.g. "torchrun --nproc-per-node 8".'
    ),
    python: str | None = typer.Option(
        None, "--python", help="Python interpreter (default python)."
    ),
    script_args: str | None = typer.Option(None, "--args", help="Arguments of the Python script."),
    auto_requeue: bool = typer.Option(
        False, "--auto-requeue", help="Without an array: the job requeues itself after the signal."
    ),
    max_requeues: int | None = typer.Option(
        None, "--max-requeues", help="Bound of --auto-requeue (default [submit] max_requeues, 3)."
    ),
    heartbeat: str | None = typer.Option(None, "--heartbeat", help="Heartbeat file for the shim."),
    exit_before_end: str | None = typer.Option(
        None, "--exit-before-end", help="Shim: save and exit this long before the end (auto, 10m)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the script; submit nothing."),
    parsable: bool = typer.Option(False, "--parsable", help="Print only the job id."),
) -> int:
    """Submit a training run as a job array with signals, switches and requeue.

    Example: rtool submit train.py --array 1-10%1 --time 20:00:00 --signal B:USR1@600

    Example: rtool submit job.slurm --after-name pretrain -- --mem=64G
    """
    from slurm_templates.submit import SubmitRequest

    app_ctx = get_context(ctx)
    if after and after_name:
        raise UsageError("give --after or --after-name, not both")
    req = SubmitRequest(
        script=script,
        array=array,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        time=time,
        signal=signal,
        requeue=requeue,
        after=after,
        job_name=job_name,
        partition=partition,
        account=account,
        exclude=exclude,
        kill_switch=kill_switch,
        save_switch=save_switch,
        launcher=launcher,
        python=python,
        script_args=script_args,
        auto_requeue=auto_requeue,
        max_requeues=max_requeues,
        heartbeat=heartbeat,
        exit_before_end=exit_before_end,
        extra_args=list(extra or []),
    )
    job = _build(app_ctx, req)
    if after_name:
        job.dependency = f"afterany:{_find_job(app_ctx, after_name)}"
    text = _render(app_ctx, job, template)
    if dry_run:
        typer.echo(text, nl=False)
        if req.extra_args:
            typer.echo(f"# sbatch arguments: {' '.join(req.extra_args)}", err=True)
        return 0
    if Path(job.kill_switch).exists():
        raise RtoolError(
            f"kill switch {job.kill_switch} is present: the job would exit at once; remove it first"
        )
    return _submit(app_ctx, job, text, req.extra_args, parsable)


def _build(app_ctx: AppContext, req: Any) -> TrainingJob:
    from slurm_templates.specs import SpecError
    from slurm_templates.submit import build_job

    cfg = app_ctx.config
    try:
        return build_job(req, cfg.submit, cfg.switches, Path.cwd())
    except SpecError as exc:
        raise UsageError(str(exc)) from None


def _render(app_ctx: AppContext, job: TrainingJob, template: Path | None) -> str:
    from slurm_templates import TemplateError, render_job
    from slurm_templates.render import template_dirs

    dirs = [app_ctx.config.submit.template_dir]
    if template is not None:
        if not template.is_file():
            raise UsageError(f"--template {template}: no such file")
        dirs.insert(0, str(template.parent))
        job.template = template.name
    try:
        return render_job(job, template_dirs(dirs))
    except TemplateError as exc:
        raise UsageError(str(exc)) from None


def _find_job(app_ctx: AppContext, name: str) -> str:
    jobs = app_ctx.slurm.squeue(user=getpass.getuser(), names=[name], states="PENDING,RUNNING")
    ids = sorted({j.array_job_id for j in jobs if j.name == name})
    if not ids:
        raise RtoolError(f"--after-name {name!r}: no running or pending job of yours has that name")
    if len(ids) > 1:
        raise RtoolError(f"--after-name {name!r}: several jobs have that name ({', '.join(ids)})")
    return ids[0]


def _submit(
    app_ctx: AppContext, job: TrainingJob, text: str, extra: list[str], parsable: bool
) -> int:
    from slurm_templates.switches import record_name, submission_record

    cwd = Path.cwd()
    result = app_ctx.slurm.sbatch(extra, script=text, cwd=str(cwd))
    record = submission_record(result.job_id, job, cwd)
    try:
        app_ctx.state.write_json(record_name(job.job_name), record)
    except (OSError, RtoolError) as exc:
        typer.echo(f"rtool: warning: submission not recorded: {exc}", err=True)
    if parsable:
        typer.echo(result.job_id)
    else:
        array = f", array {job.array}" if job.array else ""
        typer.echo(f"Submitted job {result.job_id}{array} ({job.job_name})")
    return 0


_NAME = typer.Option(None, "--job-name", help="The run's job name (as given to rtool submit).")


def _switch(app_ctx: AppContext, job_name: str | None, given: str | None, which: str) -> str:
    from slurm_templates.submit import switch_path
    from slurm_templates.switches import record_name

    if given:
        return switch_path(given, None, "", Path.cwd())
    if job_name:
        record = app_ctx.state.read_json(record_name(job_name), default=None)
        if isinstance(record, dict) and record.get(f"{which}_switch"):
            return str(record[f"{which}_switch"])
    configured = getattr(app_ctx.config.switches, which)
    return switch_path(None, configured, f"{which}-switch", Path.cwd())


def stop(
    ctx: typer.Context,
    job_name: str | None = _NAME,
    cancel_pending: bool = typer.Option(
        False, "--cancel-pending", help="Also cancel the pending tasks of the array."
    ),
    kill_switch: str | None = typer.Option(None, "--kill-switch", help="Kill switch path."),
) -> int:
    """Touch the kill switch: the run saves and stops, queued tasks exit at once.

    Example: rtool stop --job-name llama-7b --cancel-pending
    """
    from slurm_templates.switches import touch_switch

    app_ctx = get_context(ctx)
    if cancel_pending and not job_name:
        raise UsageError("--cancel-pending needs --job-name")
    path = touch_switch(_switch(app_ctx, job_name, kill_switch, "kill"))
    typer.echo(f"kill switch {path} is set (remove it before the next submission)")
    if cancel_pending and job_name:
        app_ctx.slurm.scancel(name=job_name, user=getpass.getuser(), states="PENDING")
        typer.echo(f"cancelled the pending jobs and array tasks named {job_name}")
    return 0


def save(
    ctx: typer.Context,
    job_name: str | None = _NAME,
    save_switch: str | None = typer.Option(None, "--save-switch", help="Save switch path."),
) -> int:
    """Touch the save switch: the run saves a checkpoint and goes on.

    Example: rtool save --job-name llama-7b
    """
    from slurm_templates.switches import touch_switch

    path = touch_switch(_switch(get_context(ctx), job_name, save_switch, "save"))
    typer.echo(f"save switch {path} is set (the shim removes it after the save)")
    return 0


def register(cli: typer.Typer) -> None:
    """Add this module's commands to the top-level CLI."""
    cli.command("submit")(submit)
    cli.command("stop")(stop)
    cli.command("save")(save)
