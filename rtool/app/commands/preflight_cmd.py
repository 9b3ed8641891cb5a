"""`rtool preflight`: check this node, or every node of the job (the batch script runs it before
the training), with one option per setting of the registered checks (docs/nodes.md)."""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.commands.preflight_job import job_preflight, restart_check
from rtool.app.plumbing import fromspec
from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.fromspec import BodyCommand, parameter
from rtool.core.errors import UsageError
from rtool.core.selfcmd import python_argv
from rtool.nodes.preflight.node import run_checks, settings_argv
from rtool.nodes.preflight.registry import NodeContext, Settings

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext


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
        return restart_check(app_ctx, node_ctx, node_argv, restart_after)
    if here or not os.environ.get("SLURM_JOB_ID"):
        report = run_checks(node_ctx)
        typer.echo(f"pre-flight {'OK' if report.ok else 'FAILED'} - {report.summary()}")
        for o in report.outcomes:
            typer.echo(f"  {'ok  ' if o.ok else 'FAIL'} {o.check}: {o.detail}")
        return 0 if report.ok else 1
    return job_preflight(app_ctx, node_argv, pf.timeout)


def _declared() -> Any:
    """`rtool preflight`'s options: the registered checks' settings (their defaults: the
    [nodes.preflight] keys)."""
    return fromspec.declare(Settings, section="nodes.preflight")


def command() -> Any:
    """`rtool preflight`: one option per check setting, then --here and --restart-after."""
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
        *_declared().params,
        parameter("here", bool, here),
        parameter("restart_after", int | None, restart_after),
    ]
    return BodyCommand("preflight", params, preflight, inspect.getdoc(preflight) or "")


def _node_args(app_ctx: AppContext, values: dict[str, Any]) -> tuple[Any, list[str]]:
    """The context of this node's checks, and the command that runs them on every node."""
    pf = app_ctx.config.nodes.preflight
    node_ctx = NodeContext(**values, timeout=pf.check_timeout)
    settings = {k: getattr(node_ctx, k) for k in values}
    # the program that runs the checks of one node (rtool/nodes/preflight/node.py); -I: nothing
    # from the job's folder
    argv = python_argv("-m", "rtool.nodes.preflight")
    argv += ["--json", "--timeout", f"{pf.check_timeout:g}s"]
    return node_ctx, argv + settings_argv(settings)
