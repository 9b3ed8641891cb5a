"""The issue's scenarios against real local servers (time injected, never slept).

Messages each scenario produces are asserted exactly; docs/notify.md lists them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from devtools.servers import SlackLikeServer, SmtpServer
from rtool.core.alert import Status
from rtool.core.state import StateDir
from rtool.notify.deliver import flush
from rtool.notify.engine import process
from rtool.notify.outbox import Outbox
from tests.helpers import wait_for
from tests.notify.conftest import (
    T0,
    alert,
    bot_slack_cfg,
    config,
    email_cfg,
    webhook_slack_cfg,
)

H = 3600.0
ROOT = Path(__file__).resolve().parents[2]


def test_dedup_over_repeated_runs(
    state: StateDir, smtp_server: SmtpServer, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = config(email=email_cfg(smtp_server), slack=webhook_slack_cfg(monkeypatch, slack_server))
    for run in range(10):  # a cron-like poll every 5 minutes, the disk stays full
        report = process([alert(Status.CRITICAL)], cfg, state, now=T0 + run * 300)
        assert report.ok
    assert len(smtp_server.messages) == 1  # scenario: 10 runs -> 1 email
    assert len(slack_server.accepted) == 1  # and 1 Slack message
    subject = smtp_server.messages[0]["Subject"]
    assert subject == "[rtool CRITICAL] disk /scratch: 91% used (limit 80%)"


def test_repeat_after_interval(state: StateDir, smtp_server: SmtpServer) -> None:
    cfg = config(repeat_interval="4h", email=email_cfg(smtp_server))
    times = [0, 1 * H, 4 * H - 60, 4 * H, 4 * H + 60, 8 * H, 9 * H]
    kinds = [process([alert(Status.CRITICAL)], cfg, state, now=T0 + t).notified for t in times]
    assert [k[0].kind if k else None for k in kinds] == [
        "alert", None, None, "repeat", None, "repeat", None,
    ]  # fmt: skip
    assert len(smtp_server.messages) == 3  # scenario: 7 runs over 9h -> 3 emails
    first = smtp_server.messages[0]["Message-Id"]
    assert all(m["References"] == first for m in smtp_server.messages[1:])


def test_resolved_notice_threads_under_the_first_message(
    state: StateDir, smtp_server: SmtpServer, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = config(email=email_cfg(smtp_server), slack=bot_slack_cfg(monkeypatch, slack_server))
    process([alert(Status.WARNING)], cfg, state, now=T0)
    process([alert(Status.CRITICAL)], cfg, state, now=T0 + 600)
    report = process([alert(Status.OK, pct=40)], cfg, state, now=T0 + 2 * H + 300)
    assert [d.kind for d in report.notified] == ["resolved"]
    assert report.sent == {"email": 1, "slack": 1}
    mails = smtp_server.messages
    assert len(mails) == 3  # scenario: alert, change, resolved -> 3 emails, 3 Slack messages
    resolved = mails[2]
    assert resolved["Subject"].startswith("[rtool RESOLVED] disk /scratch: 40% used")
    assert "(lasted 2h05m)" in resolved["Subject"]
    assert resolved["References"] == mails[0]["Message-Id"] == resolved["In-Reply-To"]
    assert "was CRITICAL" in resolved.get_content()
    posts = [r["body"] for r in slack_server.accepted]
    first_ts = slack_server.accepted[0]["answer"]["ts"]
    assert len(posts) == 3
    assert posts[0].get("thread_ts") is None and posts[1].get("thread_ts") is None
    assert posts[2]["thread_ts"] == first_ts
    # nothing more while it stays OK
    process([alert(Status.OK, pct=40)], cfg, state, now=T0 + 3 * H)
    assert len(smtp_server.messages) == 3 and len(slack_server.accepted) == 3


def test_slack_down_three_runs_then_back_every_alert_once(
    state: StateDir, smtp_server: SmtpServer, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = config(email=email_cfg(smtp_server), slack=bot_slack_cfg(monkeypatch, slack_server))
    slack_server.stop()  # connection refused
    runs = [
        [alert(Status.CRITICAL)],
        [alert(Status.CRITICAL), alert(Status.WARNING, key="job:train-10b")],
        [alert(Status.OK, pct=50), alert(Status.WARNING, key="job:train-10b")],
    ]
    for i, alerts in enumerate(runs):
        report = process(alerts, cfg, state, now=T0 + i * 600)
        assert report.sent.get("slack", 0) == 0 and report.queued["slack"] == i + 1
        assert len(smtp_server.messages) == i + 1  # the email channel is not held up
    slack_server.start()  # same port
    report = process([alert(Status.WARNING, key="job:train-10b")], cfg, state, now=T0 + 1800)
    assert report.sent == {"slack": 3} and report.ok
    headers = [r["body"]["text"] for r in slack_server.accepted]
    assert headers == [
        "[rtool CRITICAL] disk /scratch: 91% used (limit 80%)",
        "[rtool WARNING] job train-10b: /scratch 91% used (limit 80%)",
        "[rtool RESOLVED] disk /scratch: 50% used (limit 80%) (lasted 20m)",
    ]  # in order; the resolved notice threads under the first one, sent late
    assert slack_server.accepted[2]["body"]["thread_ts"] == slack_server.accepted[0]["answer"]["ts"]
    for i in range(3):
        process([alert(Status.WARNING, key="job:train-10b")], cfg, state, now=T0 + 2400 + i)
        flush(cfg, state, now=T0 + 2400 + i)
    assert len(slack_server.accepted) == 3  # none twice
    assert len(smtp_server.messages) == 3


def test_temporary_failures_back_off_then_deliver(state: StateDir, smtp_server: SmtpServer) -> None:
    cfg = config(email=email_cfg(smtp_server), retry_backoff="1m", max_backoff="4m")
    smtp_server.mode = "tempfail"  # 451 after DATA
    process([alert(Status.CRITICAL)], cfg, state, now=T0)
    [item] = Outbox(state).items()
    assert item.attempts == 1 and item.next_attempt == T0 + 60 and "451" in (item.last_error or "")
    assert flush(cfg, state, now=T0 + 30).by_outcome("queued")  # still backing off: not tried
    assert Outbox(state).items()[0].attempts == 1
    for t in (60, 180, 420):
        flush(cfg, state, now=T0 + t)
    assert Outbox(state).items()[0].next_attempt == T0 + 420 + 240  # capped at max_backoff
    smtp_server.mode = "accept"
    assert flush(cfg, state, now=T0 + 700).sent == {"email": 1}
    assert len(smtp_server.messages) == 1 and not Outbox(state).items()


def test_permanent_failure_goes_to_fallback_once(
    state: StateDir, smtp_server: SmtpServer, tmp_path: Path
) -> None:
    log = tmp_path / "alerts.log"
    cfg = config(email=email_cfg(smtp_server), log={"path": str(log), "statuses": []})
    smtp_server.mode = "permfail"  # 550 after DATA
    report = process([alert(Status.CRITICAL)], cfg, state, now=T0)
    [failed] = report.failed
    assert failed.channel == "email" and "550" in (failed.error or "")
    assert report.sent == {"log": 1} and not Outbox(state).items()
    line = log.read_text()
    assert "[rtool CRITICAL] disk /scratch" in line and "email refused this permanently" in line
    for i in range(3):  # reported once, not retried
        assert not flush(cfg, state, now=T0 + 3600 * (i + 1)).deliveries
    assert len(log.read_text().splitlines()) == 1 and not smtp_server.messages


def test_process_killed_mid_send_loses_nothing(state: StateDir, tmp_path: Path) -> None:
    smtp = SmtpServer(mode="slow", delay=20).start()
    try:
        script = tmp_path / "child.py"
        script.write_text(
            textwrap.dedent(f"""
            from rtool.notify.engine import process
            from rtool.notify.config import NotifyConfig
            from rtool.core.alert import Alert, Status
            from rtool.core.state import StateDir
            cfg = NotifyConfig.model_validate({{"email": {email_cfg(smtp, timeout="60s")!r}}})
            alert = Alert("disk:/scratch", Status.CRITICAL, "91% used", {{"value": "91%"}})
            process([alert], cfg, StateDir({str(state.path)!r}), now={T0})
            """)
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=env)
        wait_for(lambda: smtp.stalled.is_set() or child.poll() is not None, 60, 0.05, "the send")
        assert child.poll() is None, "the child finished instead of stalling"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        assert [i.channel for i in Outbox(state).items()] == ["email"]  # queued before sending
        smtp.mode = "accept"
        cfg = config(email=email_cfg(smtp))
        assert flush(cfg, state, now=T0 + 120).sent == {"email": 1}
        assert flush(cfg, state, now=T0 + 240).deliveries == []
        # the alert state was stored before the kill: the next poll does not alert again
        assert process([alert(Status.CRITICAL)], cfg, state, now=T0 + 300).notified == []
        assert len(smtp.messages) == 1  # scenario: killed mid-send -> exactly 1 email
    finally:
        smtp.stop()


@pytest.mark.parametrize("channels", [None, {"statuses": ["CRITICAL"]}])
def test_no_channel_configured_logs_to_stderr(
    state: StateDir, capsys: pytest.CaptureFixture[str], channels: dict | None
) -> None:
    cfg = config() if channels is None else config(log={"path": "-", **channels})
    process([alert(Status.CRITICAL)], cfg, state, now=T0)
    process([alert(Status.OK, pct=40)], cfg, state, now=T0 + 90)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert "[rtool CRITICAL] disk /scratch: 91% used (limit 80%)" in err[0]
    assert "[rtool RESOLVED]" in err[1] and "(lasted 1m)" in err[1]


def test_kill_between_queueing_and_state_write_queues_no_duplicate(
    state: StateDir, smtp_server: SmtpServer
) -> None:
    cfg = config(email=email_cfg(smtp_server))
    process([alert(Status.CRITICAL)], cfg, state, now=T0, send=False)
    assert len(Outbox(state).items()) == 1
    # as if killed after the outbox write, before the key state write
    epoch = state.read_json("notify/alerts.json")["epoch"]
    state.write_json("notify/alerts.json", {"epoch": epoch, "keys": {}})
    process([alert(Status.CRITICAL)], cfg, state, now=T0 + 60)
    assert len(smtp_server.messages) == 1


def test_concurrent_runs_send_each_notification_once(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch
) -> None:
    import threading

    cfg = config(slack=webhook_slack_cfg(monkeypatch, slack_server))
    keys = [f"job:run-{i}" for i in range(3)]
    process([alert(Status.CRITICAL, key=k) for k in keys], cfg, state, now=T0, send=False)
    slack_server.delay = 0.3
    slack_server.script("slow")  # the first send is slow: the other run waits on the lock
    runs = [threading.Thread(target=flush, args=(cfg, state, T0)) for _ in range(3)]
    for t in runs:
        t.start()
    for t in runs:
        t.join(30)
    assert sorted(r["body"]["text"].split("]")[1] for r in slack_server.accepted) == sorted(
        f" job {k.split(':')[1]}: /scratch 91% used (limit 80%)" for k in keys
    )
    assert not Outbox(state).items()
