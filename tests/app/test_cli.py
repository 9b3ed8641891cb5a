"""The top-level CLI: command groups, help with examples, exit codes for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest

GROUPS = ["watch", "cron", "submit", "stop", "save", "notify", "config", "status"]


def test_help_lists_every_command_group(cli) -> None:
    res = cli("--help")
    assert res.code == 0
    for group in GROUPS:
        assert f" {group} " in res.out, group
    for option in ("--config", "--verbose", "--quiet", "--debug"):
        assert option in res.out


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_has_help_with_an_example(cli, group: str) -> None:
    res = cli(group, "--help")
    assert res.code == 0
    assert "Usage: rtool" in res.out
    assert "rtool " in res.out.split("Usage:", 1)[1], "help shows no example"


def test_unknown_command_and_option_are_usage_errors(cli) -> None:
    assert cli("frobnicate").code == 2
    assert cli("config", "check", "--nope").code == 2


def test_expected_error_is_one_line_without_traceback(tmp_path, cli) -> None:
    res = cli("--config", str(tmp_path / "missing.toml"), "config", "check")
    assert res.code == 2
    assert "Traceback" not in res.err
    assert "cannot read config file" in res.err


def test_console_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from rtool.app.cli import app; app(['--help'])"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "watch" in out.stdout


def test_shim_import_stays_light() -> None:
    code = (
        "import sys, rtool.shim; "
        "heavy = {'typer', 'jinja2', 'slack_sdk', 'requests', 'pydantic'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
