"""Slurm-aware quieting in notify: an alert that follows from a node that is down or drained
(or from slurmctld not answering) is folded into that cause's alert: one Slack message for the
node, none for the rest, until the node is back (then the rest alert on their own)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devtools.servers import SlackLikeServer
from rtool.core.alert import Alert, Cause, Status
from rtool.core.state import StateDir
from rtool.notify.engine import key_states, process
from rtool.notify.fold import folded
from rtool.notify.status import collect, render
from tests.notify.conftest import T0, config, webhook_slack_cfg

N3 = Cause.node("n3")


def effects(status: Status = Status.CRITICAL) -> list[Alert]:
    return [
        Alert("log:/r/hb.json", status, "heartbeat not written for 12m", depends=(N3,)),
        Alert("run:llm", status, "llm stalled at step 900", depends=(N3, Cause.node("n4"))),
        Alert("job:llm", min(status, Status.WARNING), "llm running on n3 drained", depends=(N3,)),
        Alert("disk:/scratch", Status.OK, "/scratch 12% used"),
    ]


def node(status: Status = Status.CRITICAL) -> Alert:
    return Alert("node:n3", status, "n3 drained (GPU fell off): 3 alerts follow from it")


def texts(slack: SlackLikeServer) -> list[str]:
    return [str(m["body"].get("text", "")) for m in slack.accepted]


def test_the_dependents_of_a_bad_cause_are_folded_into_it() -> None:
    assert folded([*effects(), node()]) == {
        "log:/r/hb.json": "node:n3",
        "run:llm": "node:n3",
        "job:llm": "node:n3",
    }
    assert folded(effects()) == {}  # no cause alert in the batch: nothing folded
    assert folded([*effects(), node(Status.OK)]) == {}  # the node is fine again
    assert folded([*effects(Status.OK), node()]) == {}  # an OK alert is never folded


def test_one_node_one_message_its_resolution_names_what_is_still_bad(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(slack=webhook_slack_cfg(monkeypatch, slack_server))
    for i in range(3):  # three sweeps while n3 is drained
        report = process([*effects(), node()], cfg, state, now=T0 + 60 * i)
        assert report.ok
    assert len(slack_server.accepted) == 1 and "node n3" in texts(slack_server)[0]
    states = key_states(state)
    log = states["log:/r/hb.json"]
    assert log.folded_into == "node:n3" and log.failures == 3
    assert log.notified == "CRITICAL" and log.channels == ["slack"]  # told in the node's alert
    assert log.incident == states["node:n3"].incident  # threads under the node's message
    shown = render(collect(cfg, state, T0 + 200))
    assert "log:/r/hb.json CRITICAL" in shown and "(folded into node:n3)" in shown
    why = [d.reason for d in process([*effects(), node()], cfg, state, now=T0 + 240).decisions]
    assert why[0].startswith("folded into node:n3: ")
    # n3 resumed but the training still hangs: one resolved notice, naming what is still bad
    back = Alert("node:n3", Status.OK, "n3: no alert follows; still bad: log:/r/hb.json")
    process([*effects(), back], cfg, state, now=T0 + 300)
    [resolved] = texts(slack_server)[1:]
    assert resolved.startswith("[rtool RESOLVED] node n3") and "still bad" in resolved
    assert key_states(state)["log:/r/hb.json"].folded_into == ""
    # the training recovers: each key told in the node's alert is closed where it went
    process([*effects(Status.OK), back], cfg, state, now=T0 + 400)
    closed = texts(slack_server)[2:]
    assert len(closed) == 3 and all(t.startswith("[rtool RESOLVED]") for t in closed), closed


def test_folded_under_a_cause_not_yet_told_they_alert_on_their_own_once_unfolded(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(min_failures=2, slack=webhook_slack_cfg(monkeypatch, slack_server))
    process([*effects(), node()], cfg, state, now=T0)  # neither the node's alert nor theirs
    assert slack_server.accepted == []
    process([*effects(), node(Status.OK)], cfg, state, now=T0 + 60)  # n3 fine: theirs go out
    assert sorted(t.split(":")[0] for t in texts(slack_server)) == [
        "[rtool CRITICAL] log /r/hb.json", "[rtool CRITICAL] run llm", "[rtool WARNING] job llm"
    ]  # fmt: skip


def test_a_folded_alert_already_out_is_not_repeated_and_resolves_normally(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(repeat_interval="1h", slack=webhook_slack_cfg(monkeypatch, slack_server))
    process(effects()[:1], cfg, state, now=T0)  # the hang alerted before n3 was drained
    process([*effects()[:1], node()], cfg, state, now=T0 + 7200)  # no repeat: folded
    assert len(slack_server.accepted) == 2  # the log's alert, then the node's
    process([Alert("log:/r/hb.json", Status.OK, "written 1s ago"), node()], cfg, state, T0 + 7300)
    assert "RESOLVED" in texts(slack_server)[-1] and "log /r/hb.json" in texts(slack_server)[-1]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["log:a", "run:b", "job:c", "node:n1", "node:n2", "slurm:slurmctld"]),
            st.sampled_from(list(Status)),
            st.lists(st.sampled_from(["n1", "n2", "ctl"]), max_size=2),
        ),
        max_size=8,
    )
)
def test_nothing_is_lost_a_folded_alert_always_has_a_bad_cause_in_the_batch(
    rows: list[tuple[str, Status, list[str]]],
) -> None:
    batch = [
        Alert(key, status, key, depends=tuple(
            Cause.slurmctld() if d == "ctl" else Cause.node(d) for d in deps
        ))
        for key, status, deps in rows
    ]  # fmt: skip
    into = folded(batch)
    bad = {a.key for a in batch if a.status is not Status.OK}
    for key, cause in into.items():
        assert key in bad and cause in bad and cause != key and cause not in into


def test_a_key_ok_again_with_its_cause_is_closed_by_the_causes_notice(
    state: StateDir, slack_server: SlackLikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(slack=webhook_slack_cfg(monkeypatch, slack_server))
    process([*effects(), node()], cfg, state, now=T0)
    report = process([*effects(Status.OK), node(Status.OK)], cfg, state, now=T0 + 60)
    assert [t.split(":")[0] for t in texts(slack_server)] == [
        "[rtool CRITICAL] node n3", "[rtool RESOLVED] node n3"
    ]  # fmt: skip
    assert [d.reason for d in report.decisions[:3]] == ["resolved with node:n3"] * 3
