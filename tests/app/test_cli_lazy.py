"""The top-level group loads a command's module only when that command runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rtool.app.plumbing import lazy

_IMPORTED = """
import sys
from rtool.app.cli import main
main(sys.argv[1:])
heavy = ("rtool.app.", "rtool.slurm_templates.", "rtool.notify.", "jinja2")
heavy += ("rtool.app.plumbing.appconfig", "psutil", "rtool.runs.", "rtool.nodes.")
print(sorted(m for m in sys.modules if m.startswith(heavy)))
"""


def imported(*argv: str) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *argv], capture_output=True, text=True, timeout=60
    )
    return eval(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(lazy.COMMANDS))
def test_each_summary_is_written_once_and_opens_its_page(name: str) -> None:
    """The summary lives in lazy.COMMANDS alone: `rtool --help` lists it without importing
    the module, and the command's own page starts with it (the module does not repeat it)."""
    cmd = lazy.load(name)
    summary = lazy.COMMANDS.line(name).summary
    paragraphs = [" ".join(p.split()) for p in (cmd.help or "").split("\n\n")]
    assert paragraphs[0] == summary and summary not in paragraphs[1:], paragraphs
    assert cmd.name == name


def test_root_help_imports_no_command_module(tmp_path) -> None:
    plumbing = ["context", "errors", "helptext", "lazy"]
    assert imported("--help") == [
        "rtool.app.cli",
        "rtool.app.plumbing",
        *(f"rtool.app.plumbing.{m}" for m in plumbing),
    ]


def test_watch_disk_imports_only_what_it_uses(tmp_path) -> None:
    mods = imported("watch", "disk", str(tmp_path), "--no-notify")
    assert "rtool.app.commands.watch_cmd" in mods
    # no config file and --no-notify: neither the whole schema nor the [notify] section
    assert not {"rtool.app.plumbing.appconfig", "rtool.notify.config"} & set(mods)
    assert not [m for m in mods if m.startswith(("rtool.app.commands.submit", "jinja2"))]
    assert not {"psutil", "rtool.runs.sources", "rtool.nodes.exclude"} & set(mods)


def test_a_typo_suggests_the_command(cli) -> None:
    r = cli("wach")
    assert r.code == 2 and "Did you mean 'watch'?" in r.err


def test_watch_makes_only_the_command_run() -> None:
    from rtool.watchdogs.registry import LINES

    group = lazy.load("watch")
    assert group.commands == {}
    assert group.list_commands(None) == [*LINES, "all"]
    disk = group.get_command(None, "disk")
    assert disk.name == "disk" and list(group.commands) == ["disk"]
    assert group.get_command(None, "disk") is disk
    assert group.get_command(None, "no-such") is None
