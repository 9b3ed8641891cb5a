"""Every help page of the CLI, and the rules each one follows (tests/app/test_help.py,
tests/app/test_option_defaults.py, and the plug-in test for a new plug-in's pages).

A page is `rtool PATH... --help` for the top and every command and subcommand, the ones made
from the registries included (`rtool watch NAME`): groups are walked through `list_commands`
and `get_command`, which is how click itself finds them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from typer.main import get_command

from rtool.app.cli import cli

#: typer's type labels and argument braces, never shown to a reader.
ARTEFACTS = re.compile(r"<(bool|int|str|float|path|text|list\[[a-z]+\])>|\{[a-z_]+\}")
#: `(default: [watch] timeout, 10s)`: an option whose default is a config key's.
CONFIG_DEFAULT = re.compile(r"\(default: \[([\w.]+)\] (\w+)(?:, ([^()]*(?:\([^()]*\))?[^()]*))?\)")


def pages() -> Iterator[tuple[list[str], Any]]:
    """(path, click command) of every page; the top is ([], the root group)."""
    root = get_command(cli)
    yield from _walk(root, [], typer.Context(root, info_name="rtool"))


def _walk(cmd: Any, path: list[str], ctx: Any) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    if not is_group(cmd):
        return
    for name in cmd.list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        assert sub is not None, f"rtool {' '.join([*path, name])} is listed but cannot be made"
        yield from _walk(sub, [*path, name], typer.Context(sub, info_name=name, parent=ctx))


def is_group(cmd: Any) -> bool:
    return hasattr(cmd, "list_commands")


def _bracketed(text: str | None) -> list[str]:
    """The `[...]` pieces of a help text as written (before rich could take them for tags)."""
    return re.findall(r"\[[^\[\]]+\]", (text or "").replace("\\[", "["))


def problems(path: list[str], cmd: Any, page: str) -> list[str]:
    """What is wrong with the help page `page` of `rtool PATH... --help` (empty: nothing)."""
    out = []
    where = "rtool " + " ".join(path)
    if not page.lstrip().startswith(f"Usage: {where}".rstrip()):
        out.append(f"{where}: the page does not start with its usage line")
    bad = ARTEFACTS.findall(page)
    if bad:
        out.append(f"{where}: typer artefacts {bad}")
    if "--install-completion" in page or "[default: (" in page:
        out.append(f"{where}: completion options or a default of typer's own")
    flat = " ".join(page.replace("│", " ").split())
    for param in getattr(cmd, "params", []):
        for piece in _bracketed(getattr(param, "help", None)):
            if " ".join(piece.split()) not in flat:
                out.append(f"{where}: {piece} eaten from the help of {param.name}")
    if path and not is_group(cmd) and "Example" not in (cmd.help or ""):
        out.append(f"{where}: no example")
    if path and not (cmd.help or "").strip():
        out.append(f"{where}: no help text")
    return out
