"""What every `rtool watch` command shares: the common options, a config entry from flags,
and running the built watchdogs (`watch_cmd.py` writes commands, `watch_auto.py` generates
them)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rtool.app.context import get_context
from rtool.core.errors import UsageError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rtool.watchdogs.base import Watchdog

JSON = typer.Option(False, "--json", help="Print the results as JSON instead of status lines.")
NO_NOTIFY = typer.Option(False, "--no-notify", help="Only print; send no alert.")
TEE = typer.Option(None, "--tee", help="Also append the status lines, time-stamped, to this file.")
PROM = typer.Option(
    None,
    "--prom-textfile",
    help="Also write Prometheus metrics into this node_exporter textfile-collector folder "
    "(default: watch.prom_textfile in the config).",
)
TIMEOUT = typer.Option(
    None, "--timeout", help="Timeout of every probe (default: watch.timeout in the config, 10s)."
)

#: (name, typer parameter, type) of the options every `rtool watch` command has, last.
COMMON = (
    ("json_out", JSON, bool),
    ("no_notify", NO_NOTIFY, bool),
    ("tee", TEE, Path | None),
    ("timeout", TIMEOUT, str | None),
    ("prom", PROM, Path | None),
)

#: What a command body returns: its watchdogs, built with the probe timeout.
Build = Callable[[float], "list[Watchdog]"]


def command(body: Callable[..., Build]) -> Callable[..., int]:
    """The `rtool watch` command of `body`, a function of the context and the command's own
    options (its signature and docstring are the command's) that returns how to build its
    watchdogs: the COMMON options are added after its own, and the watchdogs are run."""

    def watch(ctx: typer.Context, **given: Any) -> int:
        common = {key: given.pop(key) for key, _, _ in COMMON}
        return run(ctx, body(ctx, **given), **common)

    own = inspect.signature(body, eval_str=True)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [*own.parameters.values()]
    params += [inspect.Parameter(k, kind, default=opt, annotation=t) for k, opt, t in COMMON]
    watch.__signature__ = own.replace(parameters=params, return_annotation=int)  # type: ignore[attr-defined]
    watch.__doc__ = body.__doc__
    watch.__name__ = body.__name__
    return watch


def make_spec(model: type[BaseModel], **values: Any) -> Any:
    """A config entry from flags; a bad value is a one-line usage error naming the flag."""
    from pydantic import ValidationError

    clean = {k: v for k, v in values.items() if v is not None}
    try:
        return model(**clean)
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = "--" + str(err["loc"][0]).replace("_", "-") if err["loc"] else model.__name__
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise UsageError(f"{flag}: {msg}") from None


def run(
    ctx: typer.Context,
    build: Callable[[float], list[Watchdog]],
    json_out: bool,
    no_notify: bool,
    tee: Path | None,
    timeout: str | None,
    prom: Path | None = None,
) -> int:
    """Build the watchdogs with the probe timeout (--timeout or the config's) and run them."""
    from rtool.watchdogs.runner import Output, run_watch

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
    out = Output(json=json_out, notify=not no_notify, tee=tee, prom_textfile=prom)
    notify_cfg = None if no_notify else app_ctx.config.notify  # --no-notify: never read
    return run_watch(watchdogs, state=app_ctx.state, notify_cfg=notify_cfg, timeout=t, out=out)


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
