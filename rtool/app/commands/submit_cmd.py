"""`rtool submit`: render a training job from a template and submit it (see docs/submit.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.fromspec import BodyCommand, default_note, parameter
from rtool.core.errors import RtoolError, UsageError
from rtool.core.slurm.hostlist import compress_hostlist
from rtool.core.slurm.parse import ParseError, expand_hostlist
from rtool.core.slurm.partition import Partition, partition
from rtool.nodes.blame import record_node_fails
from rtool.nodes.exclude import Cap, partition_nodes, plan
from rtool.nodes.preflight.registry import NodeContext, Settings, applies
from rtool.nodes.store import SuspectStore
from rtool.runs import launcherlogs, names
from rtool.runs.attempt_record_writer import read_own_heartbeat
from rtool.slurm_templates.batchfile import override, sbatch_option
from rtool.slurm_templates.jobs import render_job
from rtool.slurm_templates.renderer import ShellCode, TemplateError, template_dirs
from rtool.slurm_templates.request import SubmitRequest, declared
from rtool.slurm_templates.specs import SpecError
from rtool.slurm_templates.submit import build_job
from rtool.slurm_templates.switches import folder_warnings, foreign_switch

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext
    from rtool.core.slurm import SqueueJob
    from rtool.slurm_templates.training import TrainingJob


def submit(ctx: typer.Context, **given: Any) -> int:
    """Example: rtool submit train.py --array 1-10%1 --time 20:00:00 --signal B:USR1@600

    Example: rtool submit job.slurm --after-name pretrain -- --mem=64G
    """
    app_ctx = get_context(ctx)
    req = request(given)
    if req.after and req.after_name:
        raise UsageError("give --after or --after-name, not both")
    job = build(app_ctx, req)
    for note in job.notes:
        typer.echo(f"rtool: {note}", err=True)
    own_kill_switch = check_switches(job)
    _warn_preemption(app_ctx, job)
    text = prepare(app_ctx, req, job)
    if req.dry_run:
        typer.echo(text, nl=False)
        if req.extra_args:
            typer.echo(f"# sbatch arguments: {' '.join(req.extra_args)}", err=True)
        return 0
    if own_kill_switch:
        raise RtoolError(
            f"kill switch {job.kill_switch} is present: the job would exit at once; remove it first"
        )
    job_id = send(app_ctx, job, text, req.extra_args)
    if req.parsable:
        typer.echo(job_id)
    else:
        array = f", array {job.array}" if job.array else ""
        run = "" if job.run == job.job_name else f", run {job.run}"
        typer.echo(f"Submitted job {job_id}{array} ({job.job_name}{run})")
    return 0


def prepare(app_ctx: AppContext, req: SubmitRequest, job: TrainingJob) -> str:
    """The job's pre-flight, restart check, excluded suspects and dependency; its script."""
    if req.preflight:
        job.preflight = preflight_argv(app_ctx, job)
    if job.restarts_in_place and job.body is None:
        job.restart_check = preflight_base(app_ctx, job)
    if req.exclude_suspects:
        exclude_suspect_nodes(app_ctx, job)
    if req.after_name:
        job.dependency = f"afterany:{_find_job(app_ctx, req.after_name)}"
    return render(app_ctx, job, req.template)


def _warn_preemption(app_ctx: AppContext, job: TrainingJob) -> None:
    """Warn when the run's measured save (the longest in its heartbeat, read only when it is
    yours) does not fit in the grace of a preemptible partition; silent when Slurm cannot say."""
    hb = read_own_heartbeat(job.heartbeat) if job.heartbeat else None
    save_s = hb.longest_save_seconds if hb is not None else None
    if save_s is None:
        return
    try:
        line = save_vs_grace(save_s, partition(app_ctx.slurm, job.partition))
    except (RtoolError, ParseError):
        return
    if line:
        typer.echo(f"rtool: warning: {line}", err=True)


def save_vs_grace(save_s: float | None, part: Partition | None) -> str | None:
    """The warning when the measured save does not fit in a preemptible partition's grace: on
    one (PreemptMode REQUEUE or CANCEL) Slurm gives a preempted job GraceTime seconds after the
    first SIGTERM (docs/submit.md, "Preemption"); a longer save is cut short."""
    if save_s is None or part is None or part.preempt_mode.upper() in ("OFF", "SUSPEND"):
        return None
    if part.grace > 0 and save_s <= part.grace:
        return None
    grace = f"GraceTime {part.grace:g}s" if part.grace > 0 else "GraceTime 0 (only KillWait)"
    return (
        f"the run's measured save ({save_s:.1f}s, from earlier attempts) is longer than "
        f"partition {part.name}'s {grace}: a preemption would cut it short and lose the "
        "steps since the last checkpoint; save faster or more often (save_every), or submit "
        "to a partition with a longer GraceTime"
    )


def check_switches(job: TrainingJob) -> bool:
    """Warn about another user's switch (the job ignores it) and about switch or heartbeat
    folders others may write into; True when your own kill switch is set."""
    for line in folder_warnings(job):
        typer.echo(f"rtool: {line}", err=True)
    own = False
    for which, path in (("kill", job.kill_switch), ("save", job.save_switch)):
        if not os.path.lexists(path):
            continue
        why = foreign_switch(path)
        if why:
            typer.echo(f"rtool: warning: ignoring {which} switch {path}: {why}", err=True)
        elif which == "kill":
            own = os.path.exists(path)
    return own


def request(given: dict[str, Any]) -> SubmitRequest:
    """The request from typer's values (a list option not given comes as None)."""
    lists = {f.name for f, _ in declared() if f.default_factory is not dataclasses.MISSING}
    return SubmitRequest(**{k: v for k, v in given.items() if v is not None or k not in lists})


def request_params(
    skip: frozenset[str] = frozenset(), text_of: Callable[[str, str], str] | None = None
) -> list[Any]:
    """One click parameter per `SubmitRequest` declaration (not those in `skip`); `text_of(name,
    help)` rewrites a help text (rtool drill --submit takes them too)."""
    hints = typing.get_type_hints(SubmitRequest)
    params = []
    for f, opt in declared():
        if f.name in skip:
            continue
        annotation, default = hints[f.name], f.default
        if f.default_factory is not dataclasses.MISSING:  # a list: None when not given
            annotation, default = annotation | None, None
        text = f"{opt.help} {default_note('submit.' + opt.config)}" if opt.config else opt.help
        text = text_of(f.name, text) if text_of else text
        if not opt.flags:  # an argument
            info = typer.Argument(... if default is dataclasses.MISSING else default, help=text)
        else:
            info = typer.Option(default, *opt.flags, help=text)
        params.append(parameter(f.name, annotation, info))
    return params


def command() -> Any:
    """`rtool submit`: one option (or argument) per `SubmitRequest` declaration."""
    return BodyCommand("submit", request_params(), submit, inspect.getdoc(submit) or "")


def preflight_argv(app_ctx: AppContext, job: TrainingJob) -> list[str] | None:
    """The pre-flight command of the batch script, or None when there is nothing to check."""
    pf = app_ctx.config.nodes.preflight
    gpus = job.gpus_per_node or pf.gpus  # the job's GPUs are the ones each node must show
    settings = {**{k: getattr(pf, k) for k in Settings.model_fields}, "gpus": gpus}
    if not pf.enabled or not applies(NodeContext(**settings)):
        return None
    return preflight_base(app_ctx, job)


def preflight_base(app_ctx: AppContext, job: TrainingJob) -> list[str]:
    """`rtool --config CONFIG preflight [--gpus N]` as the batch script runs it (the check
    before an in-place restart adds `--restart-after RC`, and runs the checks that apply)."""
    gpus = job.gpus_per_node or app_ctx.config.nodes.preflight.gpus
    # job.rtool is absolute: nothing is imported from the submit folder. Exactly the config files
    # this submission read (or none): never one found at run time in the submit folder,
    # $RTOOL_CONFIG or ~/.config, which another user may have planted.
    argv = [*job.rtool, *app_ctx.config_argv(), "preflight"]
    return [*argv, "--gpus", str(gpus)] if gpus else argv


def exclude_suspect_nodes(app_ctx: AppContext, job: TrainingJob) -> None:
    """Add the suspect nodes (rtool nodes) to the job's --exclude, within the cap."""
    cfg = app_ctx.config.nodes
    if not cfg.exclude:
        return
    store = SuspectStore(app_ctx.state, cfg.expiry)
    with contextlib.suppress(RtoolError, OSError, ValueError):  # NODE_FAIL attempts of this run
        record_node_fails(app_ctx.slurm, store, names=[job.job_name], window=cfg.expiry)
    suspects = [s.node for s in store.suspects()]
    if not suspects:
        return
    own = [sbatch_option(line) for line in job.header_lines]
    given = job.exclude or next((v for o in own if o and o[0] == "exclude" for v in [o[1]]), None)
    try:
        partition, members = partition_nodes(app_ctx.slurm, job.partition)
        cap = Cap(cfg.max_excluded, cfg.min_left)
        p = plan(suspects, expand_hostlist(given or ""), members, job.nodes or 1, cap)
    except (RtoolError, ParseError) as exc:
        typer.echo(f"rtool: warning: suspect nodes not excluded: {exc}", err=True)
        return
    if p.added:
        job.exclude = compress_hostlist(p.excluded)
        if job.header_lines:  # the script's own --exclude is merged into rtool's line
            job.header_lines = [ShellCode(x) for x in override(job.header_lines, {"exclude"})]
        added = compress_hostlist(p.added, sort=True)
        typer.echo(f"rtool: excluding suspect node(s) {added} (rtool nodes)", err=True)
    if p.skipped:
        typer.echo(
            f"rtool: warning: not excluding suspect node(s) {compress_hostlist(p.skipped)} "
            f"of partition {partition}: {p.why}",
            err=True,
        )


def build(app_ctx: AppContext, req: SubmitRequest) -> TrainingJob:
    cfg = app_ctx.config
    try:
        return build_job(req, cfg.submit, cfg.switches, Path.cwd())
    except SpecError as exc:
        raise UsageError(str(exc)) from None


def render(app_ctx: AppContext, job: TrainingJob, template: Path | None) -> str:
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
    """The job id that `--after-name NAME` waits for: the one run (a plain job, or a whole
    array whatever its tasks' states) of the user with that name, running or pending."""
    jobs = app_ctx.slurm.squeue(names=[name], states="PENDING,RUNNING")  # yours only
    runs: dict[str, list[SqueueJob]] = {}
    for j in jobs:
        if j.name == name:
            runs.setdefault(j.array_job_id, []).append(j)
    if not runs:
        raise RtoolError(f"--after-name {name!r}: no running or pending job of yours has that name")
    if len(runs) > 1:
        ids = sorted(runs, key=int)
        listed = ", ".join(f"{i} ({_run_state(runs[i])})" for i in ids)
        raise UsageError(
            f"--after-name {name!r} is the name of {len(runs)} runs: {listed}; "
            f"pick one with --after JOBID (e.g. --after {ids[0]})"
        )
    return next(iter(runs))


def _run_state(records: list[SqueueJob]) -> str:
    """`array: 1 running, 3 pending` or `running` for the squeue records of one run."""
    if not any(r.is_array for r in records):
        return records[0].state.lower()
    running = sum(1 for r in records if r.state == "RUNNING")
    pending = sum(r.tasks for r in records if r.state == "PENDING")
    return f"array: {running} running, {pending} pending"


def send(app_ctx: AppContext, job: TrainingJob, text: str, extra: list[str]) -> str:
    """sbatch the script and record the submission (rtool.runs.names); the job id."""
    cwd = Path.cwd()
    result = app_ctx.slurm.sbatch(extra, script=text, cwd=str(cwd))
    record = names.Submission(
        run=job.run,
        job_name=job.job_name,
        job_id=result.job_id,
        workdir=str(cwd),
        kill_switch=job.kill_switch,
        save_switch=job.save_switch,
        array=job.array,
        heartbeat=job.heartbeat,
        log=str(cwd / job.output) if job.output else None,
        submitted=time.time(),
        launcher_logs=launcherlogs.log_dir_of(job.launcher, str(cwd)),
    )
    try:
        names.save(app_ctx.state, record)
    except (OSError, RtoolError) as exc:
        typer.echo(f"rtool: warning: submission not recorded: {exc}", err=True)
    return result.job_id
