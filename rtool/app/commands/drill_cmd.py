"""`rtool drill RUN`, `rtool drill --submit SCRIPT [submit options]`: the preemption drill
(rtool/drill/, docs/drill.md). Exits like a watchdog: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN
(its own errors too)."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.commands import submit_cmd
from rtool.app.plumbing import errors
from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.fromspec import BodyCommand, default_note, parameter
from rtool.core.alert import Status
from rtool.core.errors import RtoolError, UsageError
from rtool.core.proc import ProcError
from rtool.core.units import UnitError, parse_duration
from rtool.drill import find
from rtool.drill.throwaway import drill_folder, shared_paths, throwaway
from rtool.runs import names
from rtool.slurm_templates.request import SubmitRequest, declared
from rtool.slurm_templates.specs import SpecError, validate_signal

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext
    from rtool.drill.find import Wanted
    from rtool.drill.model import Report
    from rtool.slurm_templates.training import TrainingJob

#: `rtool submit` options a drill does not take (the drill's own --no-requeue, the script).
NOT_TAKEN = {"script", "requeue", "dry_run", "parsable", "after", "after_name"}
#: Options that mean the same with and without --submit: their help in a drill of a run.
SHARED = {
    "signal": "The job's --signal (default: its batch script's; give it when sbatch got it on "
    "its command line).",
    "heartbeat": "The shim's heartbeat file (default: the batch script's RTOOL_HEARTBEAT, or "
    "the run's [[watch.run]] entry's).",
    "job_name": "The run's job name (default: the [[watch.run]] entry's, else the run).",
}


def drill(ctx: typer.Context, **given: Any) -> int:
    """Stops the run's running attempt the way Slurm does before its time limit (its --signal:
    B: to the batch shell, else to the job steps) and checks the stop path step by step:
    signal, reached, save, lead, exit, requeue, resume. A step that broke says what to change.
    With --submit, the argument is a training script and the other options are rtool
    submit's: the drill runs in a short throw-away job (NAME-drill, in its own folder).

    Example: rtool drill llama-7b

    Example: rtool drill --submit train.py --array 0-9%1 --signal B:USR1@120 --and-submit
    """
    app_ctx = get_context(ctx)
    opts = {k: v for k, v in given.items() if k in OWN}
    submit = {k: v for k, v in given.items() if k not in OWN}
    if opts["grace"] and not opts["preempt"]:
        raise UsageError("--grace: for --preempt only (rtool drill RUN --preempt --grace 30s)")
    if opts["and_submit"] and not opts["submit"]:
        raise UsageError("--and-submit: for --submit only (rtool drill --submit SCRIPT ...)")
    if opts["submit"]:
        report, req, real = _submitted(app_ctx, opts, submit)
        _print(report, bool(opts["as_json"]))
        if opts["and_submit"]:
            _submit_real(app_ctx, report, req, real)
        return int(report.status)
    defaults = {f.name: f.default for f, _ in declared()}
    stray = [k for k, v in submit.items() if k not in SHARED and v not in (None, [], defaults[k])]
    if stray:
        flags = ", ".join("--" + k.replace("_", "-") for k in sorted(stray))
        raise UsageError(f"{flags}: for --submit only (rtool drill --submit SCRIPT ...)")
    report = find.drill(app_ctx.slurm, _wanted(app_ctx, opts, submit), _say)
    _print(report, bool(opts["as_json"]))
    return int(report.status)


def _say(text: str) -> None:
    typer.echo(f"rtool: drill: {text}", err=True)


def _print(report: Report, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
    else:
        typer.echo("\n".join(report.lines()))


def _timeouts(app_ctx: AppContext, opts: dict[str, Any]) -> dict[str, float]:
    cfg = app_ctx.config.drill
    out = {"start_timeout": cfg.start_timeout, "resume_timeout": cfg.resume_timeout}
    if opts.get("grace"):
        out["grace"] = 0.0
    for key in out:
        if opts.get(key):
            try:
                out[key] = float(parse_duration(opts[key]))
            except UnitError as exc:
                raise UsageError(f"--{key.replace('_', '-')}: {exc}") from None
    if out.get("grace") == 0:
        raise UsageError("--grace: must be more than 0s (GraceTime 0 leaves KillWait to save)")
    return out


def _wanted(app_ctx: AppContext, opts: dict[str, Any], submit: dict[str, Any]) -> Wanted:
    waits = _timeouts(app_ctx, opts)
    # the same lookup as rtool history: the run or job name, its [[watch.run]] entry, else
    # what rtool submit recorded for it
    base = names.watch_base(app_ctx.state, opts["target"], app_ctx.config.watch.run)
    try:
        signal = validate_signal(submit["signal"]) if submit.get("signal") else None
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    return find.Wanted(
        run=base["name"],
        job_name=submit.get("job_name") or base.get("job_name") or base["name"],
        job=opts.get("job"),
        signal=signal,
        heartbeat=submit.get("heartbeat") or base.get("heartbeat"),
        no_requeue=bool(opts["no_requeue"]),
        start_timeout=waits["start_timeout"],
        resume_timeout=waits["resume_timeout"],
        preempt=bool(opts.get("preempt")),
        grace=waits.get("grace"),
    )


def _submitted(
    app_ctx: AppContext, opts: dict[str, Any], submit: dict[str, Any]
) -> tuple[Report, SubmitRequest, TrainingJob]:
    """Submit the throw-away job, drill it, cancel what is left of it; the report, the request
    and the real job."""
    req = submit_cmd.request({**submit, "script": Path(opts["target"])})
    real = submit_cmd.build(app_ctx, req)
    for path in shared_paths(real):
        _say(f"warning: {path} is an absolute path in --args: the throw-away job writes there too")
    if not req.heartbeat:
        _say("note: this submission has no --heartbeat; the drill gives its job one (add it")
        _say("      to the real submission too: the watchdogs read steps and saves from it)")
    base = Path(app_ctx.config.drill.folder).expanduser()
    folder = drill_folder(base if base.is_absolute() else Path.cwd() / base, real.job_name)
    job = throwaway(real, folder)
    if req.preflight:
        job.preflight = submit_cmd.preflight_argv(app_ctx, job)
    if req.exclude_suspects:
        submit_cmd.exclude_suspect_nodes(app_ctx, job)
    text = submit_cmd.render(app_ctx, job, req.template)
    result = app_ctx.slurm.sbatch(req.extra_args, script=text, cwd=str(folder))
    _say(f"submitted the throw-away job {result.job_id} ({job.job_name}) in {folder}")
    want = dataclasses.replace(
        _wanted(app_ctx, {**opts, "target": job.job_name}, {}),
        job_name=job.job_name,
        job=result.job_id,
        heartbeat=job.heartbeat,
        throwaway=True,
    )
    try:
        return find.drill(app_ctx.slurm, want, _say), req, real  # waits for the job to start
    finally:
        _cancel(app_ctx, result.job_id, folder)


def _submit_real(
    app_ctx: AppContext, report: Report, req: SubmitRequest, real: TrainingJob
) -> None:
    """`--and-submit`: the real submission, as rtool submit makes it, when every step is OK."""
    if report.status is not Status.OK:
        _say(f"not submitting {real.job_name}: the drill is {report.status.name}")
        return
    if submit_cmd.check_switches(real):
        raise RtoolError(f"kill switch {real.kill_switch} is present: not submitting")
    text = submit_cmd.prepare(app_ctx, req, real)
    job_id = submit_cmd.send(app_ctx, real, text, req.extra_args)
    _say(f"the drill passed: submitted job {job_id} ({real.job_name})")


def _cancel(app_ctx: AppContext, job_id: str, folder: Path) -> None:
    """Cancel what is left of the throw-away job (never hiding the drill's verdict)."""
    try:
        if app_ctx.slurm.squeue(job_ids=[job_id], states="PENDING,RUNNING"):
            app_ctx.slurm.scancel([job_id])
    except ProcError as exc:
        _say(f"warning: the throw-away job {job_id} was not cancelled: {exc}")
        return
    _say(f"the throw-away job {job_id} is gone; its files stay in {folder}")


#: The drill's own options, after its argument, and their help: `--NAME` (`--json`: as_json),
#: a flag unless it takes a value (`VALUED`).
OPTIONS = {
    "submit": "Drill a short throw-away job of this script first (options as rtool submit).",
    "job": "The running job to drill when the run has several (88_3).",
    "no_requeue": "Do not wait for the next attempt: check that one is queued, and stop there.",
    "start_timeout": f"Wait this long for a first step. {default_note('drill.start_timeout')}",
    "resume_timeout": "Wait this long for the next attempt. "
    + default_note("drill.resume_timeout"),
    "and_submit": "With --submit: when every step is OK, submit the real job (as rtool submit).",
    "preempt": "Rehearse a preemption as Slurm does it on the job's partition: SIGTERM to every "
    "task, the grace, then TERM to all and the requeue.",
    "grace": "With --preempt: the grace (unset: the partition's GraceTime, or KillWait when the "
    "partition has none).",
    "as_json": "Print the report as JSON.",
}
VALUED = {"job", "start_timeout", "resume_timeout", "grace"}
OWN = {"target", *OPTIONS}


def _own() -> list[Any]:
    target = typer.Argument(..., help="The run to drill; with --submit: the training script.")
    params = [parameter("target", str, target)]
    for name, text in OPTIONS.items():
        flag = "--json" if name == "as_json" else "--" + name.replace("_", "-")
        default, kind = (None, str | None) if name in VALUED else (False, bool)
        params.append(parameter(name, kind, typer.Option(default, flag, help=text)))
    return params


def _with_submit(name: str, text: str) -> str:
    """The help of an `rtool submit` option in `rtool drill`."""
    text = f"With --submit: {text[:1].lower()}{text[1:]}"
    return f"{SHARED[name]} {text}" if name in SHARED else text


def command() -> Any:
    """`rtool drill`: its own options, then rtool submit's (for --submit). Its errors exit 3
    UNKNOWN, like a watchdog's."""
    params = [*_own(), *submit_cmd.request_params(frozenset(NOT_TAKEN), _with_submit)]
    return Drill("drill", params, drill, inspect.getdoc(drill) or "")


class Drill(errors.Policed, BodyCommand):
    """`rtool drill`: its errors, bad options included, exit 3 UNKNOWN."""

    policy = errors.WATCH
