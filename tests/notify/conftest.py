"""Fixtures for notify tests: the local servers, a state dir, config builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtools.servers import SlackLikeServer, SmtpServer
from rtool.core.alert import Alert, Status
from rtool.core.state import StateDir
from rtool.notify.config import NotifyConfig
from tests.servers.fixtures import down_port, slack_server, smtp_server

__all__ = ["down_port", "slack_server", "smtp_server"]

T0 = 1_700_000_000.0
TOKEN = "xoxb-SECRET-token-4242"


@pytest.fixture
def state(tmp_path: Path) -> StateDir:
    return StateDir(tmp_path / "state")


def email_cfg(smtp: SmtpServer | int, **extra: Any) -> dict[str, Any]:
    port = smtp if isinstance(smtp, int) else smtp.port
    return {
        "host": "127.0.0.1",
        "port": port,
        "starttls": False,
        "sender": "rtool@example.org",
        "to": ["ops@example.org"],
        "timeout": "5s",
        **extra,
    }


def webhook_slack_cfg(monkeypatch: pytest.MonkeyPatch, slack: SlackLikeServer) -> dict[str, Any]:
    monkeypatch.setenv("RTOOL_SLACK_WEBHOOK_URL", slack.webhook_url)
    return {"webhook_url_env": "RTOOL_SLACK_WEBHOOK_URL", "retry_interval": "0.05s"}


def bot_slack_cfg(monkeypatch: pytest.MonkeyPatch, slack: SlackLikeServer) -> dict[str, Any]:
    monkeypatch.setenv("RTOOL_SLACK_TOKEN", slack.token)
    return {
        "token_env": "RTOOL_SLACK_TOKEN",
        "channel": "#alerts",
        "api_url": slack.api_url,
        "retry_interval": "0.05s",
    }


def config(**sections: Any) -> NotifyConfig:
    return NotifyConfig.model_validate(sections)


def alert(status: Status, key: str = "disk:/scratch", pct: int = 91) -> Alert:
    return Alert(
        key,
        status,
        f"/scratch {pct}% used (limit 80%)",
        {"value": f"{pct}%", "threshold": "80%", "host": "login1"},
        time=T0,
    )
