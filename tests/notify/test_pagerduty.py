"""The PagerDuty Events v2 channel and escalation rules, against a local server that answers
like the Events API v2 (202 / 400 invalid event / 429 / 500)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.servers import PagerDutyLikeServer, SlackLikeServer
from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.notify.channels import DeliveryError, Envelope
from rtool.notify.channels.notification import Notification
from rtool.notify.channels.pagerduty import PagerDutyChannel, PagerDutyConfig
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox
from tests.notify.conftest import T0, alert, config, webhook_slack_cfg

KEY = "R0UT1NGKEYsecret0000000000000PD1"


@pytest.fixture
def pd() -> Iterator[PagerDutyLikeServer]:
    server = PagerDutyLikeServer(routing_key=KEY, retry_after=0).start()
    yield server
    server.stop()


def pd_cfg(monkeypatch: pytest.MonkeyPatch, server: PagerDutyLikeServer, **extra: Any) -> dict:
    monkeypatch.setenv("PD_KEY", KEY)
    return {"routing_key_env": "PD_KEY", "url": server.url, "retry_interval": "0.01s", **extra}


def test_trigger_and_resolve_share_the_alert_key(
    state: StateDir, pd: PagerDutyLikeServer, monkeypatch
) -> None:
    cfg = config(pagerduty=pd_cfg(monkeypatch, pd, source="login1"))
    assert process([alert(Status.WARNING)], cfg, state, now=T0).ok
    assert process([alert(Status.CRITICAL)], cfg, state, now=T0 + 60).ok  # changed: re-trigger
    first, changed = pd.events
    assert first["event_action"] == "trigger" and first["dedup_key"] == "disk:/scratch"
    assert first["payload"]["severity"] == "warning" and first["payload"]["source"] == "login1"
    assert first["payload"]["summary"] == "[rtool WARNING] disk /scratch: 91% used (limit 80%)"
    assert first["payload"]["custom_details"]["threshold"] == "80%"
    assert changed["payload"]["severity"] == "critical"
    assert list(pd.open) == ["disk:/scratch"]
    assert process([alert(Status.OK)], cfg, state, now=T0 + 120).ok
    assert pd.events[-1] == {
        "routing_key": KEY,
        "event_action": "resolve",
        "dedup_key": "disk:/scratch",
    }
    assert pd.open == {}


def test_429_and_5xx_are_retried_with_bounded_backoff(pd: PagerDutyLikeServer, monkeypatch) -> None:
    monkeypatch.setenv("PD_KEY", KEY)
    waits: list[float] = []
    cfg = PagerDutyConfig(routing_key_env="PD_KEY", url=pd.url, retries=4, retry_interval=1.0,
                          max_retry_wait=3.0)  # fmt: skip
    channel = PagerDutyChannel(cfg, sleep=waits.append)
    n = Notification("n1", "disk:/scratch", "alert", "CRITICAL", "full", time=T0)
    pd.script("ratelimit", "error", "error", "error")
    assert channel.send(Envelope(n)).detail == "HTTP 202"
    assert waits == [1.0, 2.0, 3.0, 3.0]  # doubling, capped at max_retry_wait
    assert [r["status"] for r in pd.requests] == [429, 500, 500, 500, 202]
    pd.mode = "error"
    with pytest.raises(DeliveryError) as exc:
        channel.send(Envelope(n))
    assert not exc.value.permanent and "HTTP 500" in exc.value.reason
    assert len(pd.requests) == 10  # 1 + retries, then it gives up for this run


def test_temporary_failure_stays_queued_and_400_is_permanent(
    state: StateDir, pd: PagerDutyLikeServer, monkeypatch, capsys
) -> None:
    cfg = config(pagerduty=pd_cfg(monkeypatch, pd, retries=1))
    pd.mode = "error"
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    assert report.queued == {"pagerduty": 1} and len(pd.requests) == 2
    pd.mode = "ok"
    assert flush(cfg, state, now=T0 + 3600).ok and list(pd.open) == ["disk:/scratch"]
    pd.mode = "invalid"
    report = process([alert(Status.OK)], cfg, state, now=T0 + 7200)
    (row,) = [d for d in report.deliveries if d.channel == "pagerduty"]
    assert row.outcome == "failed" and "HTTP 400: forced invalid" in (row.error or "")
    assert len(pd.requests) == 4  # a 400 is not retried
    assert Outbox(state).counts() == {}  # handed to the fallback (log) channel instead
    assert "pagerduty refused this permanently" in capsys.readouterr().err


def test_routing_key_from_a_private_file_and_never_shown(
    state: StateDir, pd: PagerDutyLikeServer, tmp_path: Path, capsys
) -> None:
    keyfile = tmp_path / "pd.key"
    keyfile.write_text(KEY + "\n")
    keyfile.chmod(0o644)
    cfg = config(pagerduty={"routing_key_file": str(keyfile), "url": pd.url})
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    (row,) = [d for d in report.deliveries if d.channel == "pagerduty"]
    assert row.outcome == "failed" and "readable by others" in (row.error or "")
    keyfile.chmod(0o600)
    pd.routing_key = "another-integration-key-00000000"  # PagerDuty refuses the key
    process([alert(Status.OK)], cfg, state, now=T0 + 60)
    process([alert(Status.CRITICAL, key="log:/x")], cfg, state, now=T0 + 120)
    assert "'routing_key' is invalid" in capsys.readouterr().err
    pd.routing_key = KEY
    process([alert(Status.CRITICAL, key="log:/y")], cfg, state, now=T0 + 180)
    assert list(pd.open) == ["log:/y"]
    everything = "".join(
        p.read_text(errors="replace") for p in state.path.rglob("*") if p.is_file()
    )
    assert KEY not in everything and KEY not in capsys.readouterr().err


def test_escalation_goes_to_pagerduty_once_and_is_resolved_there(
    state: StateDir, pd: PagerDutyLikeServer, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = config(
        slack=webhook_slack_cfg(monkeypatch, slack_server),
        pagerduty=pd_cfg(monkeypatch, pd, statuses=[]),  # escalations only
        escalate=[{"after": "30m", "to": "pagerduty", "match": ["check=disk"]}],
    )
    kinds = []
    for minute in (0, 10, 29, 31, 40, 90):
        report = process([alert(Status.CRITICAL), alert(Status.CRITICAL, key="log:/x")], cfg,
                         state, now=T0 + minute * 60)  # fmt: skip
        assert report.ok, report.lines()
        kinds.append(len(pd.events))
    assert kinds == [0, 0, 0, 1, 1, 1]  # once, after 30 minutes, only for the matching key
    (event,) = pd.events
    assert event["dedup_key"] == "disk:/scratch" and event["payload"]["severity"] == "critical"
    assert (
        "escalated to pagerduty: still CRITICAL after 31m"
        in event["payload"]["custom_details"]["note"]
    )
    assert len(slack_server.accepted) == 2  # the two first alerts; escalation is PagerDuty's
    process([alert(Status.OK), alert(Status.OK, key="log:/x")], cfg, state, now=T0 + 100 * 60)
    assert pd.events[-1]["event_action"] == "resolve" and pd.open == {}
    assert len(slack_server.accepted) == 4


def test_notify_test_pagerduty_leaves_no_incident(cli, tmp_path, pd, monkeypatch) -> None:
    monkeypatch.setenv("PD_KEY", KEY)
    cfg = tmp_path / "rtool.toml"
    cfg.write_text(f'[notify.pagerduty]\nrouting_key_env = "PD_KEY"\nurl = "{pd.url}"\n')
    r = cli("--config", str(cfg), "notify", "test", "--channel", "pagerduty")
    assert r.code == 0 and r.out.startswith("pagerduty: OK"), r.out + r.err
    assert [e["event_action"] for e in pd.events] == ["trigger", "resolve"] and pd.open == {}
    r = cli("--config", str(cfg), "config", "show")
    assert KEY not in r.out
