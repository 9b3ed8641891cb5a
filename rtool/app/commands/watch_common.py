"""What every `rtool watch` command shares: the common options and running the built
watchdogs (`watch_auto.py` makes one command per registered watchdog, `watch_cmd.py` lists the
written ones)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.context import get_context
from rtool.core.errors import UsageError

if TYPE_CHECKING:
    from rtool.watchdogs.base import Watchdog


@dataclass(frozen=True)
class Common:
    """An option every `rtool watch` command has, after its own."""

    name: str
    flag: str
    type: Any
    help: str
    #: The config key its default comes from (the help shows it and its value).
    config: str | None = None


COMMON = (
    Common("json_out", "--json", bool, "Print the results as JSON instead of status lines."),
    Common(
        "no_notify",
        "--no-notify",
        bool,
        "Send no alert; actions (hold, requeue, exclude, signal, py-spy dump) still happen.",
    ),
    Common(
        "dry_run",
        "--dry-run",
        bool,
        "Look only: say what would be done (hold, requeue, exclude, py-spy dump, signal) and "
        "sent; do none of it and write no state.",
    ),
    Common(
        "tee", "--tee", Path | None, "Also append the status lines, time-stamped, to this file."
    ),
    Common("timeout", "--timeout", str | None, "Timeout of every probe.", "watch.timeout"),
    Common(
        "prom",
        "--prom-textfile",
        Path | None,
        "Also write Prometheus metrics into this node_exporter textfile-collector folder.",
        "watch.prom_textfile",
    ),
)
#: A watchdog's field named like a common option is left out of its command (`--timeout`
#: gives the probe timeout of every entry).
COMMON_NAMES = {c.name for c in COMMON} | {c.flag[2:].replace("-", "_") for c in COMMON}

#: What a command body returns: its watchdogs, built with the probe timeout.
Build = Callable[[float], "list[Watchdog]"]


def _common_parameters() -> list[inspect.Parameter]:
    from rtool.app.commands.fromspec import default_note

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    out = []
    for c in COMMON:
        text = f"{c.help} {default_note(c.config)}" if c.config else c.help
        default = typer.Option(False if c.type is bool else None, c.flag, help=text)
        out.append(inspect.Parameter(c.name, kind, default=default, annotation=c.type))
    return out


def command(body: Callable[..., Build]) -> Callable[..., int]:
    """The `rtool watch` command of `body`, a function of the context and the command's own
    options (its signature and docstring are the command's) that returns how to build its
    watchdogs: the COMMON options are added after its own, and the watchdogs are run."""

    def watch(ctx: typer.Context, **given: Any) -> int:
        common = {c.name: given.pop(c.name) for c in COMMON}
        return run(ctx, body(ctx, **given), **common)

    own = inspect.signature(body, eval_str=True)
    params = [*own.parameters.values(), *_common_parameters()]
    watch.__signature__ = own.replace(parameters=params, return_annotation=int)  # type: ignore[attr-defined]
    watch.__doc__ = body.__doc__
    watch.__name__ = body.__name__
    return watch


def run(
    ctx: typer.Context,
    build: Callable[[float], list[Watchdog]],
    json_out: bool,
    no_notify: bool,
    tee: Path | None,
    timeout: str | None,
    prom: Path | None = None,
    dry_run: bool = False,
) -> int:
    """Build the watchdogs with the probe timeout (--timeout or the config's) and run them
    (`dry_run`: on a look-only state dir and Slurm layer, rtool/watchdogs/dryrun.py)."""
    from rtool.watchdogs.output import Output
    from rtool.watchdogs.runner import run_watch

    t = probe_timeout(ctx, timeout)
    watchdogs = build(t)
    if not watchdogs:
        from rtool.watchdogs.registry import configurable

        kinds = ", ".join(f"[[watch.{name}]]" for name in configurable())
        typer.echo(f"rtool: nothing to watch: the config has no {kinds} entries", err=True)
        return 3
    app_ctx = get_context(ctx)
    from rtool.watchdogs.base import SpecWatchdog

    for w in watchdogs:  # the sections a watchdog reads besides its entries ([nodes], [runs])
        if isinstance(w, SpecWatchdog):
            w.configure(app_ctx.config)
    prom = prom_folder(prom, app_ctx.config.watch.prom_textfile)
    out = Output(json_out, not no_notify, tee, prom, dry_run)
    notify_cfg = None if no_notify else app_ctx.config.notify  # --no-notify: never read
    if dry_run:  # look only: a state dir never written, a Slurm layer that only reads
        from rtool.core.slurm import Slurm
        from rtool.core.state import StateDir

        state = StateDir(app_ctx.config.state.dir, look_only=True)
        slurm: Slurm | None = Slurm(timeout=t, look_only=True)
    else:
        state, slurm = app_ctx.state, None
    return run_watch(watchdogs, state=state, notify_cfg=notify_cfg, timeout=t, out=out, slurm=slurm)


def prom_folder(flag: Path | None, configured: str | None) -> Path | None:
    """--prom-textfile, else watch.prom_textfile; a missing or unsafe folder is a usage error."""
    prom = flag if flag is not None else (Path(configured).expanduser() if configured else None)
    if prom is not None:
        from rtool.watchdogs.prometheus import TextfileDirError, check_folder

        try:
            check_folder(prom)
        except TextfileDirError as exc:
            raise UsageError(f"--prom-textfile: {exc}") from None
    return prom


def probe_timeout(ctx: typer.Context, text: str | None) -> float:
    from rtool.core.units import UnitError, parse_duration

    if text is None:
        return float(get_context(ctx).config.watch.timeout)
    try:
        value = parse_duration(text)
    except UnitError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    if value <= 0:
        raise UsageError("--timeout: must be above 0s")
    return value
