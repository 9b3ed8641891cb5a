"""The top-level group loads a command's module only when that command runs.

A command is a module and one line in `LINES` (a registry like every plug-in kind's,
rtool/core/registry.py). Its summary is written only there: `rtool --help` lists it without
importing any command module, and the command's own help page starts with it.
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

import typer

from rtool.app.plumbing.errors import CLICK_USAGE, DEFAULT, PolicyGroup
from rtool.app.plumbing.helptext import tidy
from rtool.core.registry import Line, Registry

_M = "rtool.app.commands."
#: name -> where it lives and its summary. Order = order in `rtool --help`. A module with
#: `register(cli)` adds its command to `cli`, one with `command()` makes it (from declarations:
#: rtool/app/plumbing/fromspec.py); one with only an `app` is that group.
LINES: dict[str, str | Line] = {
    "submit": Line(
        _M + "submit_cmd",
        "Submit a training run as a job array with signals, switches and requeue.",
    ),
    "stop": Line(
        _M + "stop_cmd",
        "Touch the run's kill switch: it saves and stops, queued tasks exit at once.",
    ),
    "save": Line(
        _M + "save_cmd", "Touch the run's save switch: it saves a checkpoint and goes on."
    ),
    "status": Line(
        _M + "status_cmd",
        "Show jobs, cron chain, open alerts, disk runway, memory, switches and outbox at once.",
    ),
    "history": Line(
        _M + "history_cmd",
        "Every attempt of a run (array tasks, requeues, chained jobs) and where the time went.",
    ),
    "drill": Line(
        _M + "drill_cmd",
        "Preemption drill: stop the run the way Slurm would and check save, exit, requeue, resume.",
    ),
    "watch": Line(
        _M + "watch_cmd",
        "Watchdogs for a training run, one command each, or all of the config's in one sweep.",
    ),
    "cron": Line(
        _M + "cron_cmd",
        "A crontab for Slurm clusters: a self-resubmitting scheduler job that runs "
        "cron.hourly/, cron.daily/, cron.weekly/ and cron.d/ without drift or duplicates.",
    ),
    "nodes": Line(_M + "nodes_cmd", "Suspect nodes: which nodes hurt your runs, why, since when."),
    "preflight": Line(
        _M + "preflight_cmd",
        "Pre-flight check of every node before training (docs/nodes.md).",
    ),
    "notify": Line(
        _M + "notify_cmd", "Alert channels and the outbox: test them, deliver, show their state."
    ),
    "silence": Line(
        _M + "silence_cmd", "Silences: hold matching alerts during maintenance, then summarise."
    ),
    "config": Line(_M + "config_cmd", "Check and show the config file."),
    "record": Line(
        _M + "record_cmd",
        "Append this attempt's start or end record to $RTOOL_RUN_RECORDS (batch scripts only).",
        hidden=True,  # run by rtool itself (the batch script), not listed in help
    ),
}
COMMANDS: Registry[Any] = Registry("command", LINES)


def load(name: str) -> Any:
    """The real click command `name` (imports its module)."""
    module = COMMANDS[name]
    if hasattr(module, "command"):  # made from declarations (rtool/app/plumbing/fromspec.py)
        cmd = module.command()
    elif hasattr(module, "register"):
        holder = typer.Typer()
        holder.callback()(lambda: None)  # always a group, even with one command
        module.register(holder)
        cmd = typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]
    else:
        cmd = typer.main.get_command(module.app)
    cmd.name = name
    # the help page: the command's summary (written once, above), then its own text
    summary, body = COMMANDS.line(name).summary, (cmd.help or "").strip()
    cmd.help = f"{summary}\n\n{body}" if body else summary
    return tidy(cmd)


class LazyGroup(PolicyGroup):
    """The root group: COMMANDS are loaded on first use; help lists them from their summaries."""

    policy = DEFAULT
    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in self.commands if n not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        if self._listing:  # the root help: a summary, no import
            line = COMMANDS.line(cmd_name)
            text, hidden = line.summary, line.hidden
            return tidy(
                typer.core.TyperCommand(cmd_name, help=text, short_help=text, hidden=hidden)
            )
        self.commands[cmd_name] = load(cmd_name)
        return self.commands[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        tidy(self)  # its own options (the commands below are tidied when loaded)
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except CLICK_USAGE as exc:
            if getattr(exc, "ctx", None) is not ctx:  # the command's own (an empty value)
                raise
            close = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            message = str(exc.message)  # type: ignore[attr-defined]
            if close and "Did you mean" not in message:
                exc.message = message.rstrip(".") + f". Did you mean {close[0]!r}?"  # type: ignore[attr-defined]
            raise
