"""Email channel against a real aiosmtpd server: headers, body, login, secrets, failures."""

from __future__ import annotations

from pathlib import Path

from devtools.servers import SmtpServer
from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox
from tests.notify.conftest import T0, alert, config, email_cfg


def test_mail_has_subject_every_field_and_message_id(
    state: StateDir, smtp_server: SmtpServer
) -> None:
    process([alert(Status.CRITICAL)], config(email=email_cfg(smtp_server)), state, now=T0)
    [msg] = smtp_server.messages
    assert msg["Subject"] == "[rtool CRITICAL] disk /scratch: 91% used (limit 80%)"
    assert msg["From"] == "rtool@example.org" and msg["To"] == "ops@example.org"
    assert msg["Message-Id"].startswith("<rtool.") and msg["Message-Id"].endswith("@example.org>")
    assert msg["References"] is None
    text = msg.get_content()
    for line in (
        "key        disk:/scratch",
        "value      91%",
        "threshold  80%",
        "host       login1",
    ):
        assert line in text


def test_login_with_password_from_a_private_file(state: StateDir, tmp_path: Path) -> None:
    secret = tmp_path / "smtp-password"
    secret.write_text("pw-SECRET-77\n")
    secret.chmod(0o600)
    with SmtpServer(auth=("rtool", "pw-SECRET-77")) as smtp:
        cfg = config(email=email_cfg(smtp, username="rtool", password_file=str(secret)))
        assert process([alert(Status.CRITICAL)], cfg, state, now=T0).sent == {"email": 1}
        assert len(smtp.messages) == 1


def test_wrong_password_is_permanent_and_not_echoed(
    state: StateDir, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("RTOOL_SMTP_PASSWORD", "wrong-SECRET-55")
    with SmtpServer(auth=("rtool", "right")) as smtp:
        cfg = config(email=email_cfg(smtp, username="rtool", password_env="RTOOL_SMTP_PASSWORD"))
        report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    [failed] = report.failed
    assert "535" in (failed.error or "") and "SECRET" not in (failed.error or "")
    assert report.sent == {"log": 1}  # the default fallback: the log channel on stderr


def test_missing_password_env_is_reported_by_name(state: StateDir, smtp_server) -> None:
    cfg = config(email=email_cfg(smtp_server, username="u", password_env="RTOOL_NOPE"))
    [failed] = process([alert(Status.CRITICAL)], cfg, state, now=T0).failed
    assert "RTOOL_NOPE is not set" in (failed.error or "")


def test_server_down_stays_queued_then_delivers(state: StateDir, down_port: int) -> None:
    cfg = config(email=email_cfg(down_port))
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    assert report.queued == {"email": 1}
    assert "Connection refused" in (Outbox(state).items()[0].last_error or "")
    with SmtpServer(port=down_port) as smtp:
        process([alert(Status.CRITICAL)], cfg, state, now=T0 + 3600)
        assert len(smtp.messages) == 1
