"""Slack channel against the local Slack-like server: webhook and bot token, every answer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from devtools.servers import SlackLikeServer
from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox
from tests.notify.conftest import T0, alert, bot_slack_cfg, config, webhook_slack_cfg


@pytest.fixture(params=["webhook", "bot"])
def slack_cfg(request, monkeypatch, slack_server: SlackLikeServer) -> dict:
    if request.param == "webhook":
        return webhook_slack_cfg(monkeypatch, slack_server)
    return bot_slack_cfg(monkeypatch, slack_server)


def test_block_kit_message_with_text_fallback(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict
) -> None:
    report = process([alert(Status.CRITICAL)], config(slack=slack_cfg), state, now=T0)
    assert report.sent == {"slack": 1}
    body = slack_server.accepted[0]["body"]
    assert body["text"] == "[rtool CRITICAL] disk /scratch: 91% used (limit 80%)"
    types = [b["type"] for b in body["blocks"]]
    assert types == ["header", "section", "section", "context"]
    fields = [f["text"] for f in body["blocks"][2]["fields"]]
    assert "*value*\n91%" in fields and "*threshold*\n80%" in fields
    assert "disk:/scratch" in body["blocks"][3]["elements"][0]["text"]
    assert "login1" in body["blocks"][3]["elements"][0]["text"]


def test_rate_limited_honours_retry_after_in_the_same_run(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict
) -> None:
    slack_server.script("ratelimit")  # 429, Retry-After: 1
    start = time.monotonic()
    report = process([alert(Status.CRITICAL)], config(slack=slack_cfg), state, now=T0)
    assert report.sent == {"slack": 1} and time.monotonic() - start >= 1.0
    assert [r["status"] for r in slack_server.requests] == [429, 200]


def test_long_retry_after_is_left_to_the_outbox(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict
) -> None:
    slack_server.retry_after = 120
    slack_server.mode = "ratelimit"
    cfg = config(slack=slack_cfg)
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    assert report.queued == {"slack": 1} and len(slack_server.requests) == 1
    [item] = Outbox(state).items()
    assert item.next_attempt == T0 + 120 and "429" in (item.last_error or "")
    slack_server.mode = "ok"
    assert flush(cfg, state, now=T0 + 60).sent == {}  # Retry-After not over yet
    assert flush(cfg, state, now=T0 + 121).sent == {"slack": 1}


def test_server_error_is_retried_by_the_sdk(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict
) -> None:
    slack_server.script("error", "error")
    report = process([alert(Status.CRITICAL)], config(slack=slack_cfg), state, now=T0)
    assert report.sent == {"slack": 1}
    assert [r["status"] for r in slack_server.requests] == [500, 500, 200]


def test_server_error_that_lasts_stays_queued(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict
) -> None:
    slack_server.mode = "error"
    cfg = config(slack=slack_cfg)
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    assert report.queued == {"slack": 1} and "HTTP 500" in (report.deliveries[0].error or "")
    slack_server.mode = "ok"
    assert flush(cfg, state, now=T0 + 3600).sent == {"slack": 1}
    assert len(slack_server.accepted) == 1


def test_connection_refused_stays_queued(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict
) -> None:
    slack_server.stop()
    report = process([alert(Status.CRITICAL)], config(slack=slack_cfg), state, now=T0)
    assert report.queued == {"slack": 1}
    assert "Connection refused" in (Outbox(state).items()[0].last_error or "")


@pytest.mark.parametrize("mode", ["invalid_auth", "channel_not_found"])
def test_permanent_errors_go_to_the_fallback(
    state: StateDir, slack_server: SlackLikeServer, slack_cfg: dict, tmp_path: Path, mode: str
) -> None:
    log = tmp_path / "fallback.log"
    slack_server.mode = mode
    cfg = config(slack=slack_cfg, log={"path": str(log), "statuses": []})
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    assert [(d.channel, d.outcome) for d in report.failed] == [("slack", "failed")]
    assert report.sent == {"log": 1} and not Outbox(state).items()
    assert "slack refused this permanently" in log.read_text()
    assert len(slack_server.requests) == 1  # not retried
    flush(cfg, state, now=T0 + 3600)
    assert len(slack_server.requests) == 1


def test_bot_token_channel_not_in_workspace(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = bot_slack_cfg(monkeypatch, slack_server) | {"channel": "#nope"}
    report = process([alert(Status.CRITICAL)], config(slack=cfg), state, now=T0)
    assert "channel_not_found" in (report.failed[0].error or "")
