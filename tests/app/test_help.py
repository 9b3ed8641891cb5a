"""Every help page, every command and subcommand, as a newcomer reads it: no type labels of
typer's (`<bool>`, `<int>`), no `{args}` in usage lines, no text eaten as markup (`[submit]`),
an example on every command (the rules are in tests/app/helppages.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.app.helppages import pages, problems

PAGES = list(pages())


def test_every_command_and_subcommand_has_a_page() -> None:
    """The walk reaches the pages made from the registries too (`rtool watch disk`)."""
    from rtool.app.plumbing.lazy import COMMANDS
    from rtool.watchdogs.registry import LINES

    paths = {" ".join(p) for p, _ in PAGES}
    assert set(COMMANDS) <= paths
    assert {f"watch {name}" for name in LINES} | {"watch all", "nodes forget"} <= paths
    assert "cron tick" in paths and "notify test" in paths


@pytest.mark.parametrize(("path", "cmd"), PAGES, ids=[" ".join(p) or "rtool" for p, _ in PAGES])
def test_help_page_follows_the_rules(cli, monkeypatch, path: list[str], cmd: Any) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one line per option: texts can be searched whole
    res = cli(*path, "--help")
    assert res.code == 0, res.err
    assert not problems(path, cmd, res.out), "\n".join([*problems(path, cmd, res.out), res.out])


def test_submit_help_shows_the_defaults_as_written(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    page = cli("submit", "--help").out
    assert "(default: ./kill-switch.RUN or [switches] kill)" in page
    assert "(default: [submit] max_requeues, 3)" in page
    assert "[default: --preflight]" in page
    assert re.search(r"--dry-run\s+Print the script", page)  # a flag takes no value
    assert "Usage: rtool submit [OPTIONS] SCRIPT [EXTRA_ARGS]..." in page


def test_a_docstring_paragraph_is_not_broken_where_the_source_line_was(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    page = cli("cron", "--help").out
    assert "run what is due, write the heartbeat. This is what the chain's Slurm job runs" in page


@pytest.mark.parametrize(("path", "cmd"), PAGES, ids=[" ".join(p) or "rtool" for p, _ in PAGES])
def test_help_tidying_patches_no_method_on_typers_objects(path: list[str], cmd: Any) -> None:
    """helptext.tidy sets values (help, metavar) and remakes arguments; it assigns no method on
    a command or a parameter (typer's own methods stay what they are)."""
    import typer

    help_option = cmd.get_help_option(typer.Context(cmd))
    objects = [cmd, *cmd.params, *([help_option] if help_option is not None else [])]
    patched = [(o, n) for o in objects for n in vars(o) if callable(getattr(type(o), n, None))]
    assert not patched
