from __future__ import annotations

import os
from pathlib import Path

import pytest

from rtool.app.plumbing.appconfig import load_config, load_config_text
from rtool.core.config import find_config_path
from rtool.core.config.types import resolve_secret
from rtool.core.errors import ConfigError, SecretError

THREE_MISTAKES = """\
[notify]
repeat_interval = "4 hours please"

[cron]
keep_logz = "7d"

[slurm]
timeout = "soon"
"""


def test_three_mistakes_in_three_sections_are_all_named(tmp_path: Path, cli) -> None:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(THREE_MISTAKES)
    res = cli("--config", str(cfg), "config", "check")
    assert res.code == 2
    assert "3 config error(s)" in res.err
    assert "notify.repeat_interval (line 2): not a duration" in res.err
    assert "cron.keep_logz (line 5): unknown key" in res.err
    assert "slurm.timeout (line 8): not a duration" in res.err
    assert "Traceback" not in res.err


def test_one_mistake_is_one_line(tmp_path: Path, cli) -> None:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text('[cron]\nkeep_logz = "7d"\n')
    res = cli("--config", str(cfg), "config", "check")
    assert res.code == 2
    assert res.err.strip() == f"rtool: config error in {cfg}: cron.keep_logz (line 2): unknown key"


def test_defaults_when_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert find_config_path() is None
    cfg = load_config()
    assert cfg.notify.repeat_interval == 4 * 3600
    assert cfg.slurm.timeout == 30


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    home_cfg = tmp_path / ".config" / "rtool" / "rtool.toml"
    home_cfg.parent.mkdir(parents=True)
    home_cfg.write_text("")
    assert find_config_path() == home_cfg
    (tmp_path / "rtool.toml").write_text("")
    assert find_config_path() == Path("rtool.toml")
    monkeypatch.setenv("RTOOL_CONFIG", str(tmp_path / "env.toml"))
    assert find_config_path() == tmp_path / "env.toml"
    assert find_config_path("explicit.toml") == Path("explicit.toml")


def test_units_parsed_in_config() -> None:
    cfg = load_config_text('[notify]\nrepeat_interval = "30m"\n[cron]\nkeep_logs = "2d"\n')
    assert cfg.notify.repeat_interval == 1800
    assert cfg.cron.keep_logs == 2 * 86400


def test_bad_toml_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config_text("[notify\n")


def test_pasted_secret_is_not_echoed(tmp_path: Path, cli) -> None:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text('[notify.slack]\nwebhook_url = "https://hooks.example/T000/SECRET123"\n')
    res = cli("--config", str(cfg), "config", "check")
    assert res.code == 2
    assert "notify.slack.webhook_url" in res.err
    assert "SECRET123" not in res.err + res.out


def test_config_show_prints_effective_config(tmp_path: Path, cli) -> None:
    cfg = tmp_path / "rtool.toml"
    cfg.write_text('[notify]\nrepeat_interval = "90m"\n')
    res = cli("--config", str(cfg), "config", "show")
    assert res.code == 0
    assert 'repeat_interval = "90m"' in res.out  # as written


def test_secret_from_env_and_private_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PW", "hunter2")
    assert resolve_secret("MY_PW", None, "smtp password") == "hunter2"
    f = tmp_path / "pw"
    f.write_text("s3cret\n")
    os.chmod(f, 0o600)
    assert resolve_secret(None, str(f), "smtp password") == "s3cret"
    os.chmod(f, 0o644)
    with pytest.raises(SecretError, match="readable by others") as exc:
        resolve_secret(None, str(f), "smtp password")
    assert "s3cret" not in str(exc.value)
    with pytest.raises(SecretError, match="NOPE_UNSET is not set"):
        resolve_secret("NOPE_UNSET", None, "token")
