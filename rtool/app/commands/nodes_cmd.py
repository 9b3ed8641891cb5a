"""`rtool nodes [--json]`, `rtool nodes forget NODE`, `rtool preflight` (see docs/nodes.md)."""

from __future__ import annotations

import functools
import json
import os
import time
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.commands import errors
from rtool.app.context import get_context
from rtool.core.errors import RtoolError, UsageError

if TYPE_CHECKING:
    from rtool.app.context import AppContext
    from rtool.nodes.store import SuspectStore

app = errors.group(
    errors.DEFAULT,
    help="Examples:\n\n"
    "  rtool nodes                 # the suspects, with their evidence\n\n"
    "  rtool nodes --json\n\n"
    "  rtool nodes forget gpu017   # clear a node by hand",
    invoke_without_command=True,
)


def store_of(app_ctx: AppContext) -> SuspectStore:
    from rtool.nodes.store import SuspectStore

    return SuspectStore(app_ctx.state, app_ctx.config.nodes.expiry)


@app.callback()
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    refresh: bool = typer.Option(
        True, "--refresh/--no-refresh", help="First look for new NODE_FAIL attempts in sacct."
    ),
) -> int:
    """List suspect nodes: why, since when, which runs they hurt, when suspicion expires."""
    if ctx.invoked_subcommand is not None:
        return 0
    from rtool.core.units import format_when

    app_ctx = get_context(ctx)
    store = store_of(app_ctx)
    note = refresh_node_fails(app_ctx, store) if refresh else None
    now = time.time()
    suspects = store.suspects(now)
    expiry = app_ctx.config.nodes.expiry
    if as_json:
        data = {"suspects": [s.to_json(expiry) for s in suspects], "refresh_error": note}
        typer.echo(json.dumps(data, indent=1, sort_keys=True))
        raise typer.Exit(0)
    if note:
        typer.echo(f"rtool: warning: {note}", err=True)
    if not suspects:
        typer.echo("no suspect nodes")
        raise typer.Exit(0)
    for s in suspects:
        runs = ", ".join(s.runs) or "-"
        typer.echo(f"{s.node}  suspect since {format_when(s.since, now)}  runs: {runs}")
        typer.echo(f"  expires {format_when(s.expires(expiry), now)}")
        for e in sorted(s.evidence, key=lambda e: e.time):
            job = f" job {e.job_id}" if e.job_id else ""
            typer.echo(f"  {format_when(e.time, now)}  {e.kind.value}{job}: {e.detail}")
            for line in e.output.splitlines()[-5:]:
                typer.echo(f"      | {line}")
    raise typer.Exit(0)


@app.command("forget")
def forget(ctx: typer.Context, node: str = typer.Argument(..., help="The node to clear.")) -> int:
    """Clear a suspect node by hand (its old evidence is not taken again).

    Example: rtool nodes forget gpu017
    """
    from rtool.core import validate

    try:
        validate.node(node)
    except validate.ArgvError as exc:
        raise UsageError(str(exc)) from None
    if store_of(get_context(ctx)).forget(node):
        typer.echo(f"{node} is no longer suspect")
    else:
        typer.echo(f"{node} was not suspect")
    return 0


def refresh_node_fails(app_ctx: AppContext, store: SuspectStore) -> str | None:
    """Record the NODE_FAIL attempts sacct knows of (your jobs, within the expiry)."""
    from rtool.nodes.blame import record_node_fails

    try:
        record_node_fails(app_ctx.slurm, store, names=None, window=app_ctx.config.nodes.expiry)
    except (RtoolError, OSError) as exc:
        return f"could not read sacct: {exc}"
    return None


def preflight(ctx: typer.Context, here: bool, restart_after: int | None, **given: Any) -> int:
    """Inside a job (the rendered batch script runs it) it checks every allocated node; on a
    failure it records the node, alerts, and requeues the attempt away from it (exit 3), or
    exits 1. Outside a job (or with --here) it checks this node and prints the result. The
    checks' options default to the [nodes.preflight] keys of the config. With
    --restart-after (the batch script, before it restarts the training in place) it also
    tells a crash from a stop and looks for a node that Slurm shows down or that the
    launch's log blames (docs/runs.md); exit 0: restart.

    Example: rtool preflight --gpus 8 --here
    """
    from rtool.app.commands import fromspec
    from rtool.nodes.preflight.node import run_checks

    app_ctx = get_context(ctx)
    pf = app_ctx.config.nodes.preflight
    declared = _declared()
    configured = {k: getattr(pf, k) for k in declared.made}
    # the options over the config's keys; a bad value is a usage error naming its option
    settings = fromspec.make(declared, {**configured, **fromspec.values(declared, given)})
    node_ctx, node_argv = _node_args(app_ctx, dict(settings))
    if restart_after is not None:
        if not os.environ.get("SLURM_JOB_ID"):
            raise UsageError("--restart-after: only inside a job (the batch script runs it)")
        from rtool.app.commands.restart_check import restart_check

        return restart_check(app_ctx, node_ctx, node_argv, restart_after)
    if here or not os.environ.get("SLURM_JOB_ID"):
        report = run_checks(node_ctx)
        typer.echo(f"pre-flight {'OK' if report.ok else 'FAILED'} - {report.summary()}")
        for o in report.outcomes:
            typer.echo(f"  {'ok  ' if o.ok else 'FAIL'} {o.check}: {o.detail}")
        return 0 if report.ok else 1
    return job_preflight(app_ctx, node_argv, pf.timeout)


@functools.cache
def _declared() -> Any:
    """`rtool preflight`'s options: the registered checks' settings (their defaults: the
    [nodes.preflight] keys)."""
    from rtool.app.commands import fromspec
    from rtool.nodes.preflight.registry import Settings

    return fromspec.declare(Settings, section="nodes.preflight")


def _preflight_command() -> Any:
    """`preflight` with one option per check setting, then --here."""
    import inspect

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    here = typer.Option(
        False, "--here", help="Check only this node (default inside a job: every node via srun)."
    )
    restart_after = typer.Option(
        None,
        "--restart-after",
        min=0,
        max=255,
        help="The training ended with this exit code: check before restarting it in place "
        "(the batch script runs this; docs/runs.md).",
    )
    params = [
        inspect.Parameter("ctx", kind, annotation=typer.Context),
        *_declared().params,
        inspect.Parameter("here", kind, default=here, annotation=bool),
        inspect.Parameter("restart_after", kind, default=restart_after, annotation=int | None),
    ]

    def command(ctx: typer.Context, **given: Any) -> int:
        return preflight(ctx, **given)

    command.__signature__ = inspect.Signature(params, return_annotation=int)  # type: ignore[attr-defined]
    command.__doc__ = preflight.__doc__
    return command


def _node_args(app_ctx: AppContext, values: dict[str, Any]) -> tuple[Any, list[str]]:
    """The context of this node's checks, and the command that runs them on every node."""
    from rtool.nodes.preflight.node import settings_argv
    from rtool.nodes.preflight.registry import NodeContext

    pf = app_ctx.config.nodes.preflight
    node_ctx = NodeContext(**values, timeout=pf.check_timeout)
    settings = {k: getattr(node_ctx, k) for k in values}
    argv = [*_node_command(), "--json", "--timeout", f"{pf.check_timeout:g}s"]
    return node_ctx, argv + settings_argv(settings)


def _node_command() -> list[str]:
    """The program that runs the checks of one node (rtool/nodes/preflight/node.py)."""
    from rtool.core.selfcmd import python_argv

    return python_argv("-m", "rtool.nodes.preflight")  # -I: nothing from the job's folder


def job_preflight(app_ctx: AppContext, node_argv: list[str], timeout: float) -> int:
    from rtool.nodes import preflight_job as job

    info = job.JobInfo.from_env(os.environ)
    reports, error = job.run_on_nodes(app_ctx.slurm, info, node_argv, timeout)
    if error:
        typer.echo(f"rtool: pre-flight could not run ({error}); starting the training", err=True)
        return job.OK
    outcome = job.JobOutcome(reports, [r for r in reports if not r.ok])
    for r in reports:
        typer.echo(f"rtool: pre-flight {r.summary()} ({r.seconds:g}s)", err=True)
    if not outcome.bad:
        return job.OK
    return keep_off(app_ctx, info, outcome)


def keep_off(app_ctx: AppContext, info: Any, outcome: Any) -> int:
    """Bad nodes found: record them, requeue the attempt away from them, alert; the exit code
    (3 requeued away, 1 not)."""
    from rtool.nodes import preflight_job as job
    from rtool.nodes.exclude import Cap

    cfg = app_ctx.config.nodes
    store = store_of(app_ctx)
    now = time.time()
    job.record(store, info, outcome.bad, now)
    cap = Cap(cfg.max_excluded, cfg.min_left)
    bad = [r.node for r in outcome.bad]
    outcome.code, outcome.action = job.requeue_away(
        app_ctx.slurm, store, info, bad, cap, cfg.preflight.max_requeues
    )
    typer.echo(f"rtool: pre-flight failed on {','.join(bad)}: {outcome.action}", err=True)
    _alert(app_ctx, job.alerts(info, outcome, now))
    return int(outcome.code)


def _alert(app_ctx: AppContext, alerts: list[Any]) -> None:
    """Hand the alerts to notify; a failing channel never hides the pre-flight's own result."""
    from rtool.notify.engine import process

    try:
        process(alerts, app_ctx.config.notify, app_ctx.state)
    except Exception as exc:
        typer.echo(f"rtool: warning: pre-flight alert not sent: {exc}", err=True)


def register(cli: typer.Typer) -> None:
    cli.add_typer(app, name="nodes")
    cli.command("preflight")(_preflight_command())
