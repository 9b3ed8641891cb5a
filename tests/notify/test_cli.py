"""`rtool notify test|flush|status` in-process, and secrets absent from every output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.servers import SlackLikeServer, SmtpServer
from rtool.app.plumbing.appconfig import load_config
from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.notify.engine import process
from tests.notify.conftest import alert

SMTP_PW = "pw-SECRET-smtp-31337"
HOOK_SECRET = "hookSECRETpath9000"
TOKEN = "xoxb-SECRET-bot-777"
WEBHOOK_TOKEN = "whSECRETquery42"
SECRETS = [SMTP_PW, HOOK_SECRET, TOKEN, WEBHOOK_TOKEN]


def write_config(tmp_path: Path, smtp: SmtpServer, slack_port: int, hook_port: int) -> Path:
    state = tmp_path / "st"
    path = tmp_path / "rtool.toml"
    path.write_text(f"""
[state]
dir = "{state}"
[notify]
repeat_interval = "4h"
[notify.email]
host = "127.0.0.1"
port = {smtp.port}
starttls = false
sender = "rtool@example.org"
to = ["ops@example.org"]
username = "rtool"
password_env = "RTOOL_SMTP_PASSWORD"
timeout = "5s"
[notify.slack]
webhook_url_env = "RTOOL_SLACK_WEBHOOK_URL"
retry_interval = "0.05s"
[notify.webhook]
url_env = "RTOOL_WEBHOOK_URL"
retry_interval = "0.01s"
retries = 1
""")
    return path


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    smtp = SmtpServer(auth=("rtool", SMTP_PW)).start()
    slack = SlackLikeServer(secret=HOOK_SECRET).start()
    monkeypatch.setenv("RTOOL_SMTP_PASSWORD", SMTP_PW)
    monkeypatch.setenv("RTOOL_SLACK_WEBHOOK_URL", slack.webhook_url)
    monkeypatch.setenv("RTOOL_WEBHOOK_URL", f"{slack.hook_url}?token={WEBHOOK_TOKEN}")
    cfg_path = write_config(tmp_path, smtp, slack.port, slack.port)
    yield cfg_path, smtp, slack
    slack.stop()
    smtp.stop()


def test_notify_test_all_channels_ok(cli, setup) -> None:
    cfg_path, smtp, slack = setup
    r = cli("--config", str(cfg_path), "notify", "test")
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        "email: OK (250 accepted)",
        "slack: OK (ok)",
        "webhook: OK (HTTP 200)",
    ]
    assert smtp.messages[0]["Subject"].startswith("[rtool TEST]")
    assert len(slack.accepted) == 2


def test_notify_test_reports_each_failure_and_exits_1(cli, setup) -> None:
    cfg_path, _, slack = setup
    slack.mode = "invalid_auth"
    r = cli("--config", str(cfg_path), "notify", "test")
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[0] == "email: OK (250 accepted)"
    assert lines[1] == "slack: FAILED - Slack answered HTTP 403 invalid_auth (permanent)"
    assert lines[2] == "webhook: FAILED - webhook answered HTTP 403 (permanent)"
    r = cli("--config", str(cfg_path), "notify", "test", "--channel", "email")
    assert r.code == 0 and r.out.splitlines() == ["email: OK (250 accepted)"]
    r = cli("--config", str(cfg_path), "notify", "test", "--channel", "pager")
    assert r.code == 2 and "channel 'pager' is not configured" in r.err


def test_flush_and_status(cli, setup) -> None:
    cfg_path, _, slack = setup
    cfg = load_config(cfg_path)
    state = StateDir(cfg.state.dir)
    slack.stop()
    process([alert(Status.CRITICAL)], cfg.notify, state)  # real time: the CLI uses it too
    r = cli("--config", str(cfg_path), "notify", "status")
    assert r.code == 0
    assert "outbox: 2 queued" in r.out and "Connection refused" in r.out
    assert "disk:/scratch CRITICAL since" in r.out
    data = json.loads(cli("--config", str(cfg_path), "notify", "status", "--json").out)
    assert data["outbox"]["per_channel"] == {"email": 0, "slack": 1, "webhook": 1}
    assert data["channels"]["email"]["sent"] == 1
    r = cli("--config", str(cfg_path), "notify", "flush")
    assert r.code == 1 and "2 notification(s) still queued" in r.out
    slack.start()
    r = cli("--config", str(cfg_path), "notify", "flush")
    assert r.code == 0, r.out
    assert "slack: sent 1, queued 0" in r.out and r.out.endswith("outbox empty\n")
    assert len(slack.accepted) == 2


@pytest.mark.parametrize("flags", [["--debug"], ["-vv"]])
def test_secrets_absent_from_all_output(cli, setup, tmp_path: Path, flags: list[str]) -> None:
    cfg_path, smtp, slack = setup
    cfg = load_config(cfg_path)
    state = StateDir(cfg.state.dir)
    outputs = []
    # working, then failing in every way: refused, 500, permanent errors
    outputs.append(cli(*flags, "--config", str(cfg_path), "notify", "test"))
    process([alert(Status.WARNING)], cfg.notify, state)
    slack.stop()
    smtp.auth = ("rtool", "another")
    process([alert(Status.CRITICAL)], cfg.notify, state)
    outputs.append(cli(*flags, "--config", str(cfg_path), "notify", "flush"))
    outputs.append(cli(*flags, "--config", str(cfg_path), "notify", "test"))
    slack.start()
    slack.mode = "error"
    outputs.append(cli(*flags, "--config", str(cfg_path), "notify", "flush"))
    slack.mode = "invalid_auth"
    outputs.append(cli(*flags, "--config", str(cfg_path), "notify", "flush"))
    outputs.append(cli(*flags, "--config", str(cfg_path), "notify", "status", "--json"))
    outputs.append(cli(*flags, "--config", str(cfg_path), "config", "show"))
    text = "\n".join(o.out + o.err for o in outputs)
    assert "Connection refused" in text and "535" in text and "invalid_auth" in text
    files = [
        p.read_text(errors="replace") for p in Path(cfg.state.dir or "").rglob("*") if p.is_file()
    ]
    for secret in SECRETS:
        assert secret not in text
        assert not any(secret in f for f in files)
