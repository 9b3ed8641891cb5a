"""`rtool history RUN [--json]`: a run's attempt ledger and totals (docs/runs.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.errors import reason
from rtool.app.timeline.page import parse_mode, write
from rtool.app.timeline.run import run_page
from rtool.core.errors import UsageError
from rtool.core.redact import redact_data
from rtool.core.slurm import Slurm, SlurmError
from rtool.runs import names, provenance, store
from rtool.runs.config import RunWatch
from rtool.runs.render import table
from rtool.runs.sources import refresh
from rtool.runs.totals import totals

if TYPE_CHECKING:
    from rtool.app.plumbing.context import AppContext
    from rtool.runs.model import Ledger, Totals


def history(
    ctx: typer.Context,
    run: str = typer.Argument(..., help="The run, by its run name or its jobs' name."),
    as_json: bool = typer.Option(False, "--json", help="Print the ledger and totals as JSON."),
    html: Path | None = typer.Option(
        None,
        "--html",
        help="Write the run's timeline to this file: one page, no network (docs/runs.md).",
    ),
    mode: str | None = typer.Option(None, "--mode", help="The page's file mode (unset: 0600)."),
    heartbeat: str | None = typer.Option(None, "--heartbeat", help="The shim's heartbeat file."),
    log: str | None = typer.Option(None, "--log", help="Attempt logs: logs/train-%A_%a.out."),
    job_name: str | None = typer.Option(None, "--job-name", help="Its jobs' name (default RUN)."),
    stored: bool = typer.Option(
        False, "--stored", help="Only show the ledger stored by `rtool watch run`; ask nothing."
    ),
    no_accounting: bool = typer.Option(False, "--no-accounting", help="Do not ask sacct."),
) -> int:
    """Rebuilt from sacct where accounting exists, else from the batch script's records,
    heartbeats and squeue (and says so). RUN is the run's name or its jobs' name. A watch.run
    entry of that name in the config gives the heartbeat and log paths, else what `rtool
    submit` recorded for the run. Exit 0; 1 when there is nothing to show; 2 on bad input.

    Example: rtool history llama-7b --heartbeat ckpt/heartbeat.json

    Example: rtool history llama-7b --stored --html llama-7b.html
    """
    app_ctx = get_context(ctx)
    flags = {"heartbeat": heartbeat, "log": log, "job_name": job_name}
    if no_accounting:
        flags["accounting"] = "off"
    spec = _spec(app_ctx, run, flags)
    now = time.time()
    led = store.load(app_ctx.state, spec.name) if stored else _refresh(app_ctx, spec, now)
    if led is None or not led.attempts:
        typer.echo(f"rtool: no attempts of run {run!r} found", err=True)
        return 1
    if html is not None:
        write(html, run_page(led, now), parse_mode(mode))
        typer.echo(f"wrote {html}: run {led.run}, {len(led.attempts)} attempt(s)")
        return 0
    _print(led, totals(led, now), now, as_json)
    return 0


def _spec(app_ctx: AppContext, run: str, flags: dict[str, str | None]) -> RunWatch:
    """The run's watch entry: the config's or the one `rtool submit` recorded, under the flags."""
    base = names.watch_base(app_ctx.state, run, app_ctx.config.watch.run)
    try:
        return RunWatch(**{**base, **{k: v for k, v in flags.items() if v is not None}})
    except ValueError as exc:  # pydantic's ValidationError
        raise UsageError(f"run {run!r}: {reason(exc)}") from None


def _print(led: Ledger, tot: Totals, now: float, as_json: bool) -> None:
    """The ledger as the table, or (redacted) as JSON with its totals and what changed."""
    if as_json:
        doc = {"ledger": led.to_json(), "totals": tot.to_json(), "changes": _changes(led)}
        sys.stdout.write(json.dumps(redact_data(doc), indent=1) + "\n")
    else:
        sys.stdout.write(table(led, tot, now))


def _refresh(app_ctx: AppContext, spec: RunWatch, now: float) -> Ledger | None:
    """The ledger rebuilt from Slurm (sacct or degraded), else the stored one if squeue fails."""
    cfg = app_ctx.config
    slurm = Slurm(timeout=cfg.slurm.timeout)
    try:
        queue = slurm.squeue(names=[spec.slurm_name])
    except SlurmError as exc:
        typer.echo(f"rtool: squeue failed ({exc}); showing the stored ledger", err=True)
        return store.load(app_ctx.state, spec.name)
    return refresh(spec, state=app_ctx.state, slurm=slurm, queue=queue, now=now, runs_cfg=cfg.runs)


def register(cli: typer.Typer) -> None:
    cli.command("history")(history)


def _changes(led: Ledger) -> dict[str, dict[str, object]]:
    """What changed between attempts (their provenance), by attempt number."""
    found = provenance.changed(led.attempts)
    return {str(n): {"since": since, "what": what} for n, (since, what) in found.items()}
