"""Silences: matchers, held (not lost) alerts, the summary when a silence ends, resolved notices
that still close what was open; against the local Slack-like server, time injected."""

from __future__ import annotations

import json

import pytest

from devtools.servers import SlackLikeServer
from rtool.core.alert import Alert, Status
from rtool.core.errors import UsageError
from rtool.core.state import StateDir
from rtool.notify.engine import process
from rtool.notify.silence_store import Op, Silences, parse_matcher
from tests.notify.conftest import T0, alert, config, webhook_slack_cfg

H = 3600.0
LABELS = {"key": "disk:/scratch", "check": "disk", "what": "/scratch", "status": "CRITICAL"}


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("disk:*", True),
        ("log:*", False),
        ("check=disk", True),
        ("check!=disk", False),
        ('what=~"/scr.*"', True),
        ("what=~scr", False),  # the regex must match the whole value
        ("what!~/home.*", True),
        ("status = CRITICAL", True),
        ("host=node1", False),  # a missing label is the empty string
    ],
)
def test_matchers(text: str, hit: bool) -> None:
    assert parse_matcher(text).matches(LABELS) is hit


def test_bad_matchers_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="not a valid regular expression"):
        parse_matcher("what=~(")
    with pytest.raises(UsageError, match="empty"):
        parse_matcher("  ")
    assert parse_matcher("what=~'a b'").op is Op.RE


def texts(slack: SlackLikeServer) -> list[str]:
    return [r["body"]["text"] for r in slack.accepted]


def test_silence_holds_sends_summary_and_resolves(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = config(slack=webhook_slack_cfg(monkeypatch, slack_server))
    home = "disk:/home"

    def run(t: float, *alerts: Alert) -> list[str]:
        report = process(list(alerts), cfg, state, now=T0 + t)
        assert report.ok, report.lines()
        return [f"{d.key}:{d.kind}" for d in report.notified]

    assert run(0, alert(Status.CRITICAL)) == ["disk:/scratch:alert"]
    silence = Silences(state).add([parse_matcher("check=disk")], 2 * H, "maintenance", T0 + 60)
    # the alert that went out before the silence is still closed by its resolved notice
    assert run(120, alert(Status.OK)) == ["disk:/scratch:resolved"]
    # a new alert matching the silence is held, and stays quiet while the silence lasts
    assert run(300, alert(Status.CRITICAL, key=home)) == [f"{home}:alert"]
    assert run(600, alert(Status.CRITICAL, key=home)) == []
    # one that does not match goes out
    assert run(900, alert(Status.CRITICAL, key="log:/train.out")) == ["log:/train.out:alert"]
    assert len(slack_server.accepted) == 3
    held = Silences(state).load()[0].held
    assert [h["notification"]["key"] for h in held] == [home]
    assert held[0]["channels"] == ["slack"]  # where it would have gone

    # the silence ends: one summary, and what is still open alerts again
    assert run(2 * H + 120, alert(Status.CRITICAL, key=home)) == [f"{home}:alert"]
    summary, realert = texts(slack_server)[3:]
    assert f"silence {silence.id} (check=disk) ended after 2h" in summary
    assert "held 1 notification; still open: disk:/home" in summary
    assert "[rtool CRITICAL] disk /home" in realert
    # and its resolved notice closes it later
    assert run(3 * H, alert(Status.OK, key=home)) == [f"{home}:resolved"]
    assert len(slack_server.accepted) == 6
    assert Silences(state).load()[0].summarized
    assert Silences(state).held_count() == 0


def test_alert_resolved_during_silence_is_only_in_the_summary(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch
) -> None:
    cfg = config(slack=webhook_slack_cfg(monkeypatch, slack_server))
    Silences(state).add([parse_matcher("disk:*")], H, "", T0)
    process([alert(Status.CRITICAL)], cfg, state, now=T0 + 10)
    process([alert(Status.OK)], cfg, state, now=T0 + 20)
    assert slack_server.accepted == []
    process([alert(Status.OK)], cfg, state, now=T0 + H + 1)
    (summary,) = texts(slack_server)
    assert "held 2 notifications; nothing still open; resolved meanwhile: disk:/scratch" in summary


def test_silence_cli(cli, tmp_path, slack_server: SlackLikeServer, monkeypatch) -> None:
    cfg = tmp_path / "rtool.toml"
    monkeypatch.setenv("HOOK", slack_server.webhook_url)
    cfg.write_text('[notify.slack]\nwebhook_url_env = "HOOK"\n')
    r = cli("--config", str(cfg), "silence", "add", "check=disk", "what=~/scratch.*", "--for", "2h",
            "--reason", "Lustre maintenance")  # fmt: skip
    assert r.code == 0, r.err
    ident = r.out.split()[1]
    assert "(check=disk, what=~/scratch.*) until" in r.out
    r = cli("--config", str(cfg), "silence", "list")
    assert r.out.startswith(f"{ident}  active  check=disk, what=~/scratch.*")
    assert "Lustre maintenance" in r.out
    docs = json.loads(cli("--config", str(cfg), "silence", "list", "--json").out)
    assert docs[0]["id"] == ident and docs[0]["held"] == 0
    # bad input: one line, exit 2, no traceback
    for args in (
        ["add", "x", "--for", "soon"],
        ["add", "what=~(", "--for", "1h"],
        ["remove", "zz"],
    ):
        r = cli("--config", str(cfg), "silence", *args)
        assert r.code == 2 and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    r = cli("--config", str(cfg), "silence", "remove", ident[:4])
    assert r.code == 0 and f"silence {ident} ended" in r.out
    assert cli("--config", str(cfg), "silence", "list").out.strip() == "no silences"
    assert ident in cli("--config", str(cfg), "silence", "list", "--all").out
    assert slack_server.accepted == []  # it held nothing: no summary
