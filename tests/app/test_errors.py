"""One error handler per command group (rtool/app/plumbing/errors.py): `rtool watch` maps its own
errors to 3 UNKNOWN, other commands to 2 (usage, config) or 1 (failure); always one line on
stderr, the traceback only with --debug."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]


def one_line(res: CliResult) -> bool:
    return res.err.count("\n") == 1 and res.err.startswith("rtool: ") and "Traceback" not in res.err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["watch", "--bogus"], "No such option: --bogus"),
        (["watch", "frobnicate"], "No such command"),
        (["watch", "job", "--bogus"], "No such option: --bogus"),
        (["watch", "disk"], "Missing argument"),
        (["watch", "disk", "/", "--max-used", "120%"], "--max-used"),
        (["watch", "memory", "--pid", "x"], "--pid"),
        (["watch", "log", "x", "--on-hang", "reboot"], "--on-hang"),
        (["watch", "disk", "/", "--timeout", "soon"], "--timeout"),
    ],
)
def test_watch_usage_errors_are_unknown(cli: Cli, args: list[str], needle: str) -> None:
    res = cli(*args)
    assert res.code == 3, res.err
    assert needle in res.err and one_line(res), res.err


def test_watch_config_and_state_errors_are_unknown(cli: Cli, tmp_path: Path) -> None:
    res = cli("--config", str(tmp_path / "missing.toml"), "watch", "all")
    assert res.code == 3 and "cannot read config file" in res.err and "Traceback" not in res.err
    cfg = tmp_path / "rtool.toml"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cfg.write_text(f'[state]\ndir = "{blocker}/state"\n[[watch.disk]]\npath = "/"\n')
    res = cli("--config", str(cfg), "watch", "disk", "/", "--no-notify")
    assert res.code == 3 and "state dir" in res.err and one_line(res), res.err


def test_other_groups_keep_2_for_usage_and_1_for_failures(cli: Cli, tmp_path: Path) -> None:
    for args in (
        ["frobnicate"],
        ["cron", "--bogus"],
        ["config", "check", "--nope"],
        ["status", "-x"],
    ):
        res = cli(*args)
        assert res.code == 2 and one_line(res), (args, res.err)
    res = cli("notify", "test", "--channel", "pager")
    assert res.code == 2 and one_line(res)
    (tmp_path / "train.py").write_text("")
    (tmp_path / "kill-switch").write_text("")
    res = cli("submit", str(tmp_path / "train.py"), "--kill-switch", str(tmp_path / "kill-switch"))
    assert res.code == 1 and "kill switch" in res.err and one_line(res)


def test_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:

    def crash(*_a: object, **_k: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("rtool.watchdogs.runner.run_watch", crash)
    monkeypatch.setattr("rtool.watchdogs.runner.run_watch", crash)
    res = cli("watch", "disk", "/", "--no-notify")
    assert res.code == 3 and "internal error: ZeroDivisionError" in res.err and one_line(res)
    res = cli("--debug", "watch", "disk", "/", "--no-notify")
    assert res.code == 3 and "Traceback" in res.err
    monkeypatch.setattr("rtool.core.config.config_files", crash)
    res = cli("config", "check")
    assert res.code == 1 and "internal error" in res.err and one_line(res)


def test_an_error_line_never_shows_a_secret(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:

    def leak(*_a: object, **_k: object) -> int:
        raise OSError("cannot reach https://hooks.slack.com/services/T0/B0/s3cr3tT0k3n")

    monkeypatch.setattr("rtool.watchdogs.runner.run_watch", leak)
    res = cli("watch", "disk", "/", "--no-notify")
    assert res.code == 3 and "hooks.slack.com" in res.err and one_line(res), res.err
    assert "s3cr3tT0k3n" not in res.err


def test_help_and_no_arguments(cli: Cli) -> None:
    assert cli("watch", "--help").code == 0
    res = cli("watch")
    assert res.code == 3 and "Usage: rtool watch" in res.out + res.err
    assert cli("cron").code == 2


_KEEP = "empty value (leave the option out for its default)"


@pytest.mark.parametrize(
    ("args", "code", "name", "page"),
    [
        (["--config", "", "status"], 2, "--config", ""),
        (["submit", "x.py", "--array", " "], 2, "--array", " submit"),
        (["submit", ""], 2, "SCRIPT", " submit"),
        (["cron", "status", "--dir", ""], 2, "--dir", " cron status"),
        (["nodes", "forget", ""], 2, "NODE", " nodes forget"),
        (["watch", "disk", "/", ""], 3, "PATH", " watch disk"),
        (["watch", "memory", "--pid", "1", "--pid", ""], 3, "--pid", " watch memory"),
        (["drill", "--job", "", "x"], 3, "--job", " drill"),
        (["preflight", "--gpus", ""], 2, "--gpus", " preflight"),
    ],
)
def test_an_empty_value_is_refused_by_name(
    cli: Cli, args: list[str], code: int, name: str, page: str
) -> None:
    """Refused before its type reads it (an empty path would be `.`), with the command's own
    exit code (`rtool watch` and `rtool drill`: 3) and never as a typo of the command."""
    res = cli(*args)
    why = _KEEP if name.startswith("--") else "empty value"
    assert (res.code, res.err) == (code, f"rtool: {name}: {why} (see 'rtool{page} --help')\n")
