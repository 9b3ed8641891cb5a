"""pytest fixtures for the local servers (function scope: every test gets fresh ones).

smtp_server   SmtpServer in "accept" mode (set .mode to tempfail / permfail / slow)
slack_server  SlackLikeServer in "ok" mode, token "xoxb-test-token", channel "#alerts"
down_port     a port nothing listens on (connection refused)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.servers import SlackLikeServer, SmtpServer, free_port


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer(mode="accept").start()
    yield server
    server.stop()


@pytest.fixture
def slack_server() -> Iterator[SlackLikeServer]:
    server = SlackLikeServer(token="xoxb-test-token", channels={"#alerts"}).start()
    yield server
    server.stop()


@pytest.fixture
def down_port() -> int:
    return free_port()
