"""The demo workspace: folders, the config (periods compressed to seconds), the cron folder
with the watchdog in cron.hourly/, an `rtool` wrapper for this interpreter, the toy training.

Layout of DIR:
    rtool.toml            the config every rtool call of the demo uses
    bin/rtool             runs this Python's rtool (so Slurm jobs and the cron ticks use it)
    state/                rtool's state dir (alerts, outbox, cron ticks, watchdog memory)
    cron/                 the cron folder; cron.hourly/watch-training runs `rtool watch all`
    limit/                the array demo-limit: short time limits, trains to the end, finished()
    train/                the array demo-train: rtool save, a hang, rtool stop
                          (each: Slurm output, switches, run/ with steps log, checkpoint, heartbeat)
    alerts.log            the log channel;  watch.log: every watchdog status line (--tee)
    summary.json          the demo's machine-readable result
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from rtool.app.plumbing.appconfig import load_config_text
from rtool.core.errors import RtoolError, UsageError
from rtool.core.selfcmd import rtool_argv
from rtool.cron import manage

#: Job names of the two arrays: one lives through Slurm's time limits to the end, the other is
#: saved on request, hangs and is stopped (its limit is far away: Slurm may send the time-limit
#: signal up to a minute early, which would cut those steps short).
LIMIT, TRAIN = "demo-limit", "demo-train"


@dataclass(frozen=True)
class Timing:
    """Every period of the demo, in seconds (compressed from hours and minutes)."""

    step: float = 0.2  # one training step
    tick: int = 4  # cron emulator period (hourly jobs run every tick)
    stale: int = 8  # log watchdog: a log not written for this long is a hang
    # demo-limit: Slurm's minimum limit is a minute. Slurm sends the signal at its first check
    # (every 30 s) after limit - lead - 30 s: here 5-35 s into a task, never before the
    # training has its handler in place (a signal then would find nobody to forward it to).
    limit_time: str = "0:01:00"
    limit_signal: str = "B:USR1@25"
    # USR1 announces the end: the shim trains on until ~10 s before it (docs/shim.md), so a
    # task trains ~45 s; 70 s of training needs two tasks whatever the signal's timing.
    limit_steps: int = 350
    limit_tasks: int = 10
    # demo-train: no time limit within the demo
    train_time: str = "0:10:00"
    train_signal: str = "B:USR1@60"
    train_tasks: int = 6


class Workspace:
    """The paths of the workspace in `root` (see the module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "rtool.toml"
        self.rtool = root / "bin" / "rtool"
        self.cron = root / "cron"
        self.state = root / "state"
        self.alerts_log = root / "alerts.log"
        self.watch_log = root / "watch.log"
        self.summary = root / "summary.json"
        self.slack_secret = root / "secrets" / "slack-webhook-url"

    def job_dir(self, name: str) -> Path:
        return self.root / ("train" if name == TRAIN else "limit")

    def run_dir(self, name: str) -> Path:
        return self.job_dir(name) / "run"

    def outputs(self, name: str) -> list[Path]:
        """The Slurm output files of the array `name` (`%x-%A_%a.out`), by task number."""
        files = self.job_dir(name).glob(f"{name}-*_*.out")
        return sorted(files, key=lambda p: (len(p.name), p.name))


def locate_toy() -> Path:
    """examples/train_toy.py of the checkout the demo runs from."""
    toy = Path(__file__).resolve().parents[2] / "examples" / "train_toy.py"
    if not toy.is_file():
        raise RtoolError(
            f"the toy training {toy} is missing: run the demo from a checkout of rtool"
        )
    return toy


def prepare_dir(root: Path) -> Path:
    """Create `root` (it must not exist or be empty: the accounting reads every file in it)."""
    root = root.expanduser().resolve()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"--dir {root}: not an empty folder; give a new one")
    root.mkdir(parents=True, exist_ok=True)
    return root


def create(
    root: Path,
    timing: Timing,
    smtp_port: int | None = None,
    slack_url: str | None = None,
) -> Workspace:
    """Write the whole workspace into the (empty) folder `root`."""
    ws = Workspace(root)
    for sub in ("bin", "train/run", "limit/run"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    ws.state.mkdir(mode=0o700, exist_ok=True)
    if slack_url is not None:
        ws.slack_secret.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(ws.slack_secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(slack_url + "\n")
    text = config_text(ws, timing, smtp_port, slack_url is not None)
    load_config_text(text, str(ws.config))  # a broken demo config fails here, not in a job
    ws.config.write_text(text)
    _write_exe(ws.rtool, wrapper_script())
    manage.init(ws.cron)
    _write_exe(ws.cron / "cron.hourly" / "watch-training", hourly_script(ws))
    return ws


def _write_exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _s(value: object) -> str:
    """A TOML basic string (JSON's escapes are valid TOML)."""
    return json.dumps(str(value))


def config_text(ws: Workspace, t: Timing, smtp_port: int | None, slack: bool) -> str:
    lines = [
        "# rtool demo: every period compressed to seconds (hours and minutes on a real cluster).",
        "[state]",
        f"dir = {_s(ws.state)}",
        "",
        *_channels(ws, smtp_port, slack),
        "",
        "[cron]",
        f"dir = {_s(ws.cron)}",
        'job_timeout = "30s"',
        'grace = "30s"',
        "[cron.periods]",
        f'hourly = "{t.tick}s"',
        "",
        "[[watch.log]]",
        f"path = {_s(ws.job_dir(TRAIN) / (TRAIN + '-*.out'))}",
        f'stale = "{t.stale}s"',
        f"job_name = {_s(TRAIN)}",
        'on_hang = "requeue"',
        "dump_stacks = true",
        "",
        "[submit]",
        f"python = {_s(sys.executable)}",
        "",
    ]
    return "\n".join(lines)


def _channels(ws: Workspace, smtp_port: int | None, slack: bool) -> list[str]:
    """The [notify] sections: the log channel, and the local servers' when they run."""
    lines = ["[notify]", 'repeat_interval = "0"', "", "[notify.log]", f"path = {_s(ws.alerts_log)}"]
    if smtp_port is not None:
        lines += [
            "",
            "[notify.email]",
            'host = "127.0.0.1"',
            f"port = {smtp_port}",
            "starttls = false",
            'sender = "rtool-demo@localhost"',
            'to = ["you@localhost"]',
            'timeout = "5s"',
        ]
    if slack:
        secret = f"webhook_url_file = {_s(ws.slack_secret)}"
        lines += ["", "[notify.slack]", secret, 'timeout = "5s"']
    return lines


def wrapper_script() -> str:
    return f'#!/bin/sh\nexec {shlex.join(rtool_argv())} "$@"\n'


def hourly_script(ws: Workspace) -> str:
    rtool, cfg, tee = (shlex.quote(str(p)) for p in (ws.rtool, ws.config, ws.watch_log))
    return (
        "#!/bin/sh\n"
        "# The demo's watchdogs: every tick of the cron emulator (hourly on a real cluster).\n"
        "# The watchdogs send their own alerts; `|| true` keeps a CRITICAL check from also\n"
        "# counting as a failed cron job.\n"
        f"{rtool} --config {cfg} watch all --tee {tee} || true\n"
    )
