"""The demo (scripts/demo, `python -m devtools.demo`): everything rtool does, on a real (local)
Slurm, in a few minutes.

Starts the local 3-node Slurm when none is reachable. Exit code: 0 when every step happened as
expected, 1 otherwise (the summary says why), 2 for bad options.

Example: scripts/demo --with-servers --dir /tmp/rtool-demo
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from devtools.demo import hang_scene, steps, summary
from devtools.demo.inbox import Inbox
from devtools.demo.narrate import Narrator, WaitTimeout
from devtools.demo.observe import Accounting, account, saves_by_pid
from devtools.demo.scenario import Demo, StepFailed, ensure_slurm
from devtools.demo.workspace import LIMIT, TRAIN, Timing, create, locate_toy, prepare_dir
from devtools.localslurm import control
from rtool.core.errors import RtoolError

SCENARIO: list[tuple[str, Callable[[Demo], None]]] = [
    ("time-limit", steps.time_limit),
    ("save-switch", steps.save_switch),
    ("hang", hang_scene.hang),
    ("node-failure", steps.node_failure),
    ("kill-switch", steps.stop),
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="scripts/demo",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="Workspace folder (new or empty; kept afterwards). Default: a temp folder, removed.",
    )
    p.add_argument(
        "--with-servers",
        action="store_true",
        help="Also send the alerts by email and Slack, to a local SMTP server and a local "
        "Slack-like server, and print what they receive.",
    )
    p.add_argument(
        "--keep",
        action="store_true",
        help="Keep the temp workspace, and the local Slurm if the demo started it.",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """The demo with command-line options; an expected failure is one line on stderr."""
    args = parser().parse_args(argv)
    try:
        return run_demo(args.dir, args.with_servers, args.keep)
    except RtoolError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return exc.exit_code


def run_demo(
    directory: Path | None,
    with_servers: bool,
    keep: bool,
    console: Console | None = None,
    timing: Timing | None = None,
) -> int:
    t0 = time.monotonic()
    n = Narrator(console)
    timing = timing or Timing()
    locate_toy()
    root = prepare_dir(directory or Path(tempfile.mkdtemp(prefix="rtool-demo-")))
    keep_dir = keep or directory is not None
    n.title(f"rtool demo in {root}")
    n.root = str(root)
    started_slurm = ensure_slurm(n)
    inbox = Inbox(root / "alerts.log")
    problems: list[str] = []
    try:
        smtp_port, slack_url = inbox.start_servers() if with_servers else (None, None)
        if with_servers:
            base = str(slack_url).split("/services/")[0]
            n.ok(f"local SMTP server on 127.0.0.1:{smtp_port}, Slack-like server on {base}")
        ws = create(root, timing, smtp_port, slack_url)
        n.ok(f"workspace ready: config {ws.config}")
        demo = Demo(ws, timing, n, inbox)
        demo.check_no_leftovers()
        problems += _walk(demo)
        result = _finish(demo, problems, time.monotonic() - t0)
    finally:
        inbox.stop()
        if started_slurm is not None and not keep:
            control.down(started_slurm)
    summary.render(n.console, result)
    if keep_dir:
        n.console.print(f"workspace kept: {root} (summary.json, logs, alerts.log)")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if result["ok"] else 1


def _walk(demo: Demo) -> list[str]:
    """Run the scenario; returns what went wrong (a failed step skips the dependent ones)."""
    problems: list[str] = []
    try:
        steps.start(demo)
        for name, step in SCENARIO:
            try:
                step(demo)
            except (StepFailed, WaitTimeout) as exc:
                demo.record(name, False, f"{name}: {exc}")
                break
        try:
            steps.finished(demo)
        except (StepFailed, WaitTimeout) as exc:
            demo.record("finished", False, f"finished: {exc}")
    except (StepFailed, WaitTimeout) as exc:
        problems.append(f"setup: {exc}")
    finally:
        _cleanup(demo, problems)
    return problems


def _cleanup(demo: Demo, problems: list[str]) -> None:
    """Stop the cron chain and whatever of the training array is left."""
    demo.n.title("Cleaning up")
    try:
        demo.rtool("cron", "stop")
    except StepFailed as exc:
        problems.append(f"cleanup: {exc}")
    for name in (LIMIT, TRAIN):
        if not demo.active(name):
            continue
        demo.n.say(f"cancelling what is left of {name}")
        try:
            demo.slurm.scancel(name=name)
        except Exception as exc:  # report, never hide the scenario's own result
            problems.append(f"cleanup: scancel {name}: {exc}")


def _finish(demo: Demo, problems: list[str], wall: float) -> dict[str, object]:
    demo.n.pause(1.0, "the last notifications")
    accounting: dict[str, Accounting] = {}
    for name in (LIMIT, TRAIN):
        lines = demo.steps(name)
        if lines:
            accounting[name] = account(lines, saves_by_pid(demo.outputs(name)))
    tally = demo.inbox.tally()
    for channel, got in tally.items():
        alerts, resolved = got["alert"], got["resolved"]
        if (alerts, resolved) != (1, 1):
            why = f"{alerts} alert(s) and {resolved} resolved notice(s), not 1+1"
            problems.append(f"{channel}: {why}")
    result = summary.build(demo.events, accounting, demo.inbox.received(), tally, wall, problems)
    summary.write(demo.ws.summary, result)
    return result
