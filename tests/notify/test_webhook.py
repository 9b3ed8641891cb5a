"""Webhook channel: the JSON document, retries on 5xx, permanent 4xx, 429."""

from __future__ import annotations

import pytest

from devtools.servers import SlackLikeServer
from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.notify.channels.webhook import SCHEMA
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox
from tests.notify.conftest import T0, alert, config


@pytest.fixture
def hook(monkeypatch, slack_server: SlackLikeServer) -> dict:
    monkeypatch.setenv("RTOOL_WEBHOOK_URL", slack_server.hook_url)
    return {"url_env": "RTOOL_WEBHOOK_URL", "retry_interval": "0.01s", "statuses": ["CRITICAL"]}


def test_document_schema(state: StateDir, slack_server: SlackLikeServer, hook: dict) -> None:
    cfg = config(webhook=hook)
    process([alert(Status.WARNING)], cfg, state, now=T0)  # not routed here
    process([alert(Status.CRITICAL)], cfg, state, now=T0 + 60)
    process([alert(Status.OK, pct=10)], cfg, state, now=T0 + 120)
    docs = [r["body"] for r in slack_server.accepted]
    assert [(d["kind"], d["status"]) for d in docs] == [("changed", "CRITICAL"), ("resolved", "OK")]
    first = docs[0]
    assert first["schema"] == SCHEMA and first["key"] == "disk:/scratch"
    assert first["fields"] == {"value": "91%", "threshold": "80%", "host": "login1"}
    assert first["previous"] == "WARNING" and first["since"] == T0
    assert docs[1]["duration"] == 120 and docs[1]["incident"] == first["incident"]


def test_server_errors_are_retried_then_queued(
    state: StateDir, slack_server: SlackLikeServer, hook: dict
) -> None:
    slack_server.script("error", "error")
    assert process([alert(Status.CRITICAL)], config(webhook=hook), state, now=T0).sent == {
        "webhook": 1
    }
    slack_server.mode = "error"
    report = process([alert(Status.CRITICAL, key="k:2")], config(webhook=hook), state, now=T0)
    assert report.queued == {"webhook": 1} and len(slack_server.requests) == 3 + 3


def test_404_is_permanent(state: StateDir, slack_server: SlackLikeServer, hook: dict) -> None:
    slack_server.mode = "channel_not_found"  # answers 404
    report = process([alert(Status.CRITICAL)], config(webhook=hook), state, now=T0)
    assert "HTTP 404" in (report.failed[0].error or "") and not Outbox(state).items()


def test_429_waits_for_retry_after(
    state: StateDir, slack_server: SlackLikeServer, hook: dict
) -> None:
    slack_server.retry_after = 300
    slack_server.script("ratelimit")
    cfg = config(webhook=hook)
    assert process([alert(Status.CRITICAL)], cfg, state, now=T0).queued == {"webhook": 1}
    assert Outbox(state).items()[0].next_attempt == T0 + 300
    assert flush(cfg, state, now=T0 + 301).sent == {"webhook": 1}
