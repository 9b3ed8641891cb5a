"""Every help page as a newcomer reads it: no type labels of typer's (`<bool>`, `<int>`), no
`{args}` in usage lines, no text eaten as markup (`[submit]`), an example on every command."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from rtool.app.commands import lazy


def _pages() -> Iterator[tuple[list[str], Any]]:
    def walk(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield [], None  # rtool --help
    for name in lazy.COMMANDS:
        yield from walk(lazy.load(name), [name])


PAGES = list(_pages())
ARTEFACTS = re.compile(r"<(bool|int|str|float|path|text|list\[[a-z]+\])>|\{[a-z_]+\}")


def _bracketed(text: str | None) -> list[str]:
    """The `[...]` pieces of a help text as written (before rich could take them for tags)."""
    return re.findall(r"\[[^\[\]]+\]", (text or "").replace("\\[", "["))


@pytest.mark.parametrize(("path", "cmd"), PAGES, ids=[" ".join(p) or "rtool" for p, _ in PAGES])
def test_help_page_has_no_artefacts(cli, monkeypatch, path: list[str], cmd: Any) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one line per option: texts can be searched whole
    res = cli(*path, "--help")
    assert res.code == 0, res.err
    page = res.out
    assert page.lstrip().startswith(f"Usage: rtool {' '.join(path)}".rstrip())
    bad = ARTEFACTS.findall(page)
    assert not bad, f"typer artefacts {bad} in:\n{page}"
    assert "--install-completion" not in page and "[default: (" not in page
    flat = " ".join(page.replace("│", " ").split())
    for param in getattr(cmd, "params", []):
        for piece in _bracketed(getattr(param, "help", None)):
            assert " ".join(piece.split()) in flat, f"{piece} eaten from the help of {param.name}"


@pytest.mark.parametrize(
    ("path", "cmd"),
    [(p, c) for p, c in PAGES if c is not None and not getattr(c, "commands", None)],
    ids=[" ".join(p) for p, c in PAGES if c is not None and not getattr(c, "commands", None)],
)
def test_every_command_shows_an_example(path: list[str], cmd: Any) -> None:
    assert "Example" in (cmd.help or ""), f"rtool {' '.join(path)} --help has no example"


def test_submit_help_shows_the_defaults_as_written(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    page = cli("submit", "--help").out
    assert "(default: ./kill-switch.RUN or [switches] kill)" in page
    assert "(default [submit] max_requeues, 3)" in page
    assert "[default: --preflight]" in page
    assert re.search(r"--dry-run\s+Print the script", page)  # a flag takes no value
    assert "Usage: rtool submit [OPTIONS] SCRIPT [EXTRA_ARGS]..." in page


def test_a_docstring_paragraph_is_not_broken_where_the_source_line_was(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    page = cli("cron", "--help").out
    assert "run what is due, write the heartbeat. This is what the chain's Slurm job runs" in page
