"""The kinds of plug-in, and a throw-away plug-in of each for the plug-in test (test_kinds.py).

A kind is: the registry file and the variable that lists its plug-ins (one line each), the line
a new plug-in adds there, the module it adds (in the throw-away package `plugs`, or, for the
watchdog, the worked example of docs/architecture.md at its place in the tree), and the
function of driver.py that checks it in the copy. Adding a kind is one more `Kind` here and
one more function in driver.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Kind:
    name: str
    #: The registry file (relative to the repository) and the variable listing the plug-ins.
    registry: str
    variable: str
    #: The one line the new plug-in adds to that variable.
    line: str
    #: Where its module goes (relative to the copy's import root) and its source.
    module: str
    source: str


def example(title: str) -> str:
    """The code block of docs/architecture.md that follows `<!-- example: TITLE -->`."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    m = re.search(rf"<!-- example: {re.escape(title)} -->\n```\w*\n(.*?)```", text, re.S)
    if m is None:
        raise LookupError(f"docs/architecture.md has no example {title!r}")
    return m.group(1)


CHECK = '''"""load: the 1-minute load average per CPU is below max_load (a node busy with another
job's processes trains slowly)."""

from __future__ import annotations

import os

from rtool.core.config.fields import setting
from rtool.core.config.types import Section
from rtool.nodes.preflight.base import NodeBase, Outcome

NAME = "load"


class Settings(Section):
    max_load: float | None = setting(None, "The 1-minute load average per CPU must be below this.")


def applies(ctx: NodeBase) -> bool:
    return ctx.max_load is not None


def run(ctx: NodeBase) -> Outcome:
    per_cpu = os.getloadavg()[0] / (os.cpu_count() or 1)
    return Outcome(NAME, per_cpu < ctx.max_load, f"{per_cpu:.2f} per CPU (limit {ctx.max_load:g})")
'''

CHANNEL = '''"""The jsonl channel: one JSON document per notification, appended to a file."""

from __future__ import annotations

import json
import os

from rtool.core.config.fields import setting
from rtool.core.safeio import UnsafeFileError, append_fd
from rtool.notify.channels.base import ChannelSection, DeliveryError, Envelope, Receipt
from rtool.notify.channels.webhook import document


class JsonlConfig(ChannelSection):
    path: str = setting(..., "The file that gets one JSON document per notification.")


class JsonlChannel:
    """One JSON document (the webhook's) per notification, appended to a file."""

    name = "jsonl"
    config = JsonlConfig

    def __init__(self, cfg: JsonlConfig) -> None:
        self.cfg = cfg

    def send(self, envelope: Envelope) -> Receipt:
        line = json.dumps(document(envelope)) + "\\n"
        try:
            fd = append_fd(os.path.expanduser(self.cfg.path))
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        except (OSError, UnsafeFileError) as exc:
            raise DeliveryError(f"cannot append to {self.cfg.path}: {exc}", permanent=False)
        return Receipt(detail=self.cfg.path)
'''

WATCH_COMMAND = '''"""`rtool watch here`."""

from __future__ import annotations

import os

import typer

from rtool.app.plumbing.watch_common import Build


def here_cmd(ctx: typer.Context) -> Build:
    """The disk of the current folder and this node's memory, with their declared defaults.

    Example: rtool watch here --no-notify
    """
    from rtool.watchdogs.config import DiskWatch, MemoryWatch
    from rtool.watchdogs.disk import DiskWatchdog
    from rtool.watchdogs.memory import MemoryWatchdog

    disk = DiskWatch(path=os.getcwd())
    return lambda t: [DiskWatchdog([disk], t), MemoryWatchdog([MemoryWatch()], t)]
'''

COMMAND = '''"""`rtool where`."""

from __future__ import annotations

import typer

from rtool.app.plumbing.context import get_context


def where(ctx: typer.Context) -> int:
    """It prints the config file rtool reads (none: the built-in defaults) and its state folder.

    Example: rtool where
    """
    from rtool.core.config import find_config_path

    app_ctx = get_context(ctx)
    found = find_config_path(app_ctx.config_path)
    typer.echo(f"config: {found or 'none (built-in defaults)'}")
    typer.echo(f"state: {app_ctx.state.path}")
    return 0


def register(cli: typer.Typer) -> None:
    cli.command("where")(where)
'''


SIGNATURE = """\"\"\"ib-down: the node's InfiniBand port went down (its mlx5 driver says so).\"\"\"

from rtool.runs.signatures.base import ROOT, Declared

SIGNATURE = Declared(
    name="ib-down",
    label="InfiniBand link down",
    pattern=r"\\bmlx5_core [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]"
    r"(?: [a-z0-9]{1,16})?: Link down",
    node_level=True,
    tier=ROOT,
    action="have the node's InfiniBand link checked; resubmit away from it",
    why="the node's own network port",
    examples=(
        "[ 8123.456789] mlx5_core 0000:81:00.0 ib0: Link down",
        "kernel: mlx5_core 0000:c1:00.0 ibp193s0: Link down",
    ),
    near_misses=(
        "# when the IB link is down, NCCL falls back to sockets",
        'print("mlx5_core link down? retrying")',
    ),
)
"""

SECTION = '''"""The [site] section: what a site tells rtool about itself."""

from __future__ import annotations

from rtool.core.config.fields import setting
from rtool.core.config.types import Section


class SiteConfig(Section):
    """[site]: the site's own names for things."""

    scratch: str = setting("/scratch", "The site's scratch folder.")
    max_jobs: int = setting(10, "How many jobs one user may queue.")
'''


def kinds() -> dict[str, Kind]:
    return {
        "watchdog": Kind(
            "watchdog",
            "rtool/watchdogs/registry.py",
            "LINES",
            example("registry line").strip(),
            "rtool/watchdogs/ckpt.py",
            example("rtool/watchdogs/ckpt.py"),
        ),
        "check": Kind(
            "check",
            "rtool/nodes/preflight/registry.py",
            "LINES",
            '"load": "plugs.load",',
            "plugs/load.py",
            CHECK,
        ),
        "channel": Kind(
            "channel",
            "rtool/notify/channels/__init__.py",
            "LINES",
            '"jsonl": "plugs.jsonl:JsonlChannel",',
            "plugs/jsonl.py",
            CHANNEL,
        ),
        "watch-command": Kind(
            "watch-command",
            "rtool/app/commands/watch_cmd.py",
            "WRITTEN",
            '"here": "plugs.here:here_cmd",',
            "plugs/here.py",
            WATCH_COMMAND,
        ),
        "signature": Kind(
            "signature",
            "rtool/runs/signatures/__init__.py",
            "LINES",
            '"ib-down": "plugs.ib_down:SIGNATURE",',
            "plugs/ib_down.py",
            SIGNATURE,
        ),
        "section": Kind(
            "section",
            "rtool/app/plumbing/sections.py",
            "LINES",
            '"site": "plugs.site:SiteConfig",',
            "plugs/site.py",
            SECTION,
        ),
        "command": Kind(
            "command",
            "rtool/app/plumbing/lazy.py",
            "LINES",
            '"where": Line("plugs.where", "Where rtool finds its config and keeps its state."),',
            "plugs/where.py",
            COMMAND,
        ),
    }
