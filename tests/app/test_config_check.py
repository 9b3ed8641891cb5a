"""`rtool config check` resolves every secret before an alert needs it and reports every problem
at once (exit 2); `--send-test` sends one test alert through each configured channel, to the
local SMTP and Slack-like servers, and says per channel whether it was accepted (issue 30,
point 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from devtools.servers import SlackLikeServer, SmtpServer

#: A uid that is neither the test's user nor root.
OTHER_UID = 54321
SECRET_VALUES = ["pw-SECRET-0644", "https://hooks.example.org/not-yours-SECRET", "ftp-SECRET"]


def _write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_every_secret_problem_is_reported_at_once(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pw = _write(tmp_path / "smtp-pw", SECRET_VALUES[0], 0o644)  # readable by others
    theirs = _write(tmp_path / "hook-url", SECRET_VALUES[1])
    os.chown(theirs, OTHER_UID, -1)  # not yours
    empty = _write(tmp_path / "empty-key", "")
    monkeypatch.delenv("RT_UNSET_SLACK", raising=False)
    monkeypatch.setenv("RT_PING", "ftp://hc-ping.example.org/ftp-SECRET")
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(f"""
[notify.email]
host = "127.0.0.1"
sender = "rtool@example.org"
to = ["ops@example.org"]
username = "rtool"
password_file = "{pw}"
[notify.slack]
webhook_url_env = "RT_UNSET_SLACK"
[notify.webhook]
url_file = "{theirs}"
[notify.pagerduty]
routing_key_file = "{empty}"
url = "not a url"
[cron]
ping_url_env = "RT_PING"
""")
    res = cli("--config", str(cfg), "config", "check")
    assert res.code == 2, res.out
    lines = res.err.splitlines()
    assert lines[0] == f"rtool: 6 config error(s) in {cfg}:"
    assert f"  notify.email.password_file: secret file {pw} is readable by others (mode 0644); " \
        f"run: chmod 600 {pw}" in lines  # fmt: skip
    assert "  notify.slack.webhook_url_env: environment variable RT_UNSET_SLACK is not set " \
        "(or empty)" in lines  # fmt: skip
    assert any(f"notify.webhook.url_file: secret file {theirs} is owned by uid {OTHER_UID}" in x
               for x in lines)  # fmt: skip
    assert f"  notify.pagerduty.routing_key_file: the secret file {empty} is empty" in lines
    assert "  notify.pagerduty.url: not an http(s) URL (it must start with https:// or " \
        "http://)" in lines  # fmt: skip
    assert "  cron.ping_url_env: not an http(s) URL (it must start with https:// or " \
        "http://)" in lines  # fmt: skip
    for secret in SECRET_VALUES:
        assert secret not in res.out + res.err
    assert "Traceback" not in res.err


def test_a_sound_config_is_ok_and_send_test_reaches_each_server(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    smtp = SmtpServer(auth=("rtool", "pw-smtp-31337")).start()
    slack = SlackLikeServer(secret="hookSECRETpath9000").start()
    try:
        pw = _write(tmp_path / "smtp-pw", "pw-smtp-31337\n")
        monkeypatch.setenv("RT_SLACK_URL", slack.webhook_url)
        monkeypatch.setenv("RT_HOOK_URL", slack.hook_url)
        cfg = tmp_path / "rtool.toml"
        cfg.write_text(f"""
[notify.email]
host = "127.0.0.1"
port = {smtp.port}
starttls = false
sender = "rtool@example.org"
to = ["ops@example.org"]
username = "rtool"
password_file = "{pw}"
timeout = "5s"
[notify.slack]
webhook_url_env = "RT_SLACK_URL"
retry_interval = "0.05s"
[notify.webhook]
url_env = "RT_HOOK_URL"
retries = 0
""")
        res = cli("--config", str(cfg), "config", "check")
        assert res.code == 0 and res.out == f"config OK: {cfg}\n", res.err
        assert not smtp.messages and not slack.accepted  # check alone sends nothing
        res = cli("--config", str(cfg), "config", "check", "--send-test")
        assert res.code == 0, res.out + res.err
        assert res.out.splitlines() == [
            f"config OK: {cfg}",
            "email: OK (250 accepted)",
            "slack: OK (ok)",
            "webhook: OK (HTTP 200)",
        ]
        assert smtp.messages[0]["Subject"].startswith("[rtool TEST]")
        assert len(slack.accepted) == 2
        slack.mode = "invalid_auth"
        res = cli("--config", str(cfg), "config", "check", "--send-test")
        assert res.code == 1
        assert "slack: FAILED - Slack answered HTTP 403 invalid_auth (permanent)" in res.out
        assert "email: OK (250 accepted)" in res.out
        # a broken secret: nothing is sent, the problem is named (exit 2)
        os.chmod(pw, 0o640)
        sent = len(smtp.messages)
        res = cli("--config", str(cfg), "config", "check", "--send-test")
        assert res.code == 2 and "notify.email.password_file: secret file" in res.err
        assert len(smtp.messages) == sent
    finally:
        slack.stop()
        smtp.stop()
