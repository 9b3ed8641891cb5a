"""What every `rtool watch` command shares: the common options and running the built
watchdogs (`watch_cmd.py` makes one command per registered watchdog and lists the
written ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from rtool.app.plumbing.context import get_context
from rtool.app.plumbing.fromspec import BodyCommand, as_given, default_note, parameter
from rtool.core.errors import UsageError
from rtool.core.state import StateDir
from rtool.core.units import UnitError, parse_duration
from rtool.watchdogs import runner
from rtool.watchdogs.base import SpecWatchdog, Watchdog
from rtool.watchdogs.registry import configurable


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
Build = Callable[[float], list[Watchdog]]


def common_parameters() -> list[Any]:
    """The click parameters of the COMMON options (made anew for each command)."""
    out = []
    for c in COMMON:
        text = f"{c.help} {default_note(c.config)}" if c.config else c.help
        default = typer.Option(False if c.type is bool else None, c.flag, help=text)
        out.append(parameter(c.name, c.type, default))
    return out


class WatchCommand(BodyCommand):
    """An `rtool watch` command: its body (a function of the context and the command's own
    options) returns how to build its watchdogs; the COMMON options, after its own, say how
    they are run."""

    def __init__(self, name: str, own: list[Any], body: Callable[..., Build], help: str) -> None:
        super().__init__(name, [*own, *common_parameters()], body, help)

    def invoke(self, ctx: Any) -> int:
        given = as_given(ctx.params)
        common = {c.name: given.pop(c.name) for c in COMMON}
        return run(ctx, self.body(ctx, **given), **common)


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
    t = probe_timeout(ctx, timeout)
    watchdogs = build(t)
    if not watchdogs:
        kinds = ", ".join(f"[[watch.{name}]]" for name in configurable())
        typer.echo(f"rtool: nothing to watch: the config has no {kinds} entries", err=True)
        return 3
    app_ctx = get_context(ctx)

    for w in watchdogs:  # the sections a watchdog reads besides its entries ([nodes], [runs])
        if isinstance(w, SpecWatchdog):
            w.configure(app_ctx.config)
    prom = prom_folder(prom, app_ctx.config.watch.prom_textfile)
    out = runner.Output(json_out, not no_notify, tee, prom, dry_run)
    notify_cfg = None if no_notify else app_ctx.config.notify  # --no-notify: never read
    if dry_run:  # look only: a state dir never written, a Slurm layer that only reads
        from rtool.core.slurm import Slurm  # only here: rtool watch disk needs no Slurm layer

        state = StateDir(app_ctx.config.state.dir, look_only=True)
        slurm: Slurm | None = Slurm(timeout=t, look_only=True)
    else:
        state, slurm = app_ctx.state, None
    return runner.run_watch(
        watchdogs, state=state, notify_cfg=notify_cfg, timeout=t, out=out, slurm=slurm
    )


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
    if text is None:
        return float(get_context(ctx).config.watch.timeout)
    try:
        value = parse_duration(text)
    except UnitError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    if value <= 0:
        raise UsageError("--timeout: must be above 0s")
    return value
