"""The per-key state machine (pure): first alert, change, repeat, resolved, min_failures."""

from __future__ import annotations

from rtool.core.alert import Status
from rtool.notify.decide import KeyState, decide
from tests.notify.conftest import T0, alert

H = 3600.0


def run(statuses: list[tuple[float, Status]], repeat: float = 4 * H, min_failures: int = 1):
    st = KeyState()
    kinds = []
    for t, s in statuses:
        st, d = decide(st, alert(s), T0 + t, repeat, min_failures)
        kinds.append(d.kind)
    return kinds, st


def test_first_bad_result_alerts_and_nothing_again_while_unchanged() -> None:
    kinds, st = run([(0, Status.CRITICAL), (60, Status.CRITICAL), (120, Status.CRITICAL)])
    assert kinds == ["alert", None, None]
    assert st.failures == 3 and st.since == T0


def test_ok_polls_send_nothing() -> None:
    kinds, _ = run([(0, Status.OK), (60, Status.OK)])
    assert kinds == [None, None]


def test_status_change_is_sent_both_ways() -> None:
    kinds, _ = run([(0, Status.WARNING), (60, Status.CRITICAL), (120, Status.WARNING)])
    assert kinds == ["alert", "changed", "changed"]


def test_repeat_after_interval_counts_from_last_notification() -> None:
    t = [0, H, 4 * H - 1, 4 * H, 5 * H, 8 * H]
    kinds, _ = run([(x, Status.CRITICAL) for x in t])
    assert kinds == ["alert", None, None, "repeat", None, "repeat"]


def test_repeat_interval_zero_never_repeats() -> None:
    kinds, _ = run([(0, Status.CRITICAL), (100 * H, Status.CRITICAL)], repeat=0)
    assert kinds == ["alert", None]


def test_resolved_after_alert_with_duration_source() -> None:
    st = KeyState()
    st, _ = decide(st, alert(Status.CRITICAL), T0, 4 * H)
    st, _ = decide(st, alert(Status.CRITICAL), T0 + 600, 4 * H)
    before = st
    st, d = decide(st, alert(Status.OK), T0 + 2 * H, 4 * H)
    assert d.kind == "resolved" and before.since == T0
    assert st.status == "OK" and st.notified is None and st.version == before.version + 1


def test_min_failures_rides_out_flapping() -> None:
    flap = [(0, Status.CRITICAL), (60, Status.OK), (120, Status.CRITICAL), (180, Status.OK)]
    kinds, _ = run(flap, min_failures=2)
    assert kinds == [None, None, None, None]  # no alert, so no resolved notice either
    kinds, st = run([(0, Status.WARNING), (60, Status.CRITICAL)], min_failures=2)
    assert kinds == [None, "alert"] and st.notified == "CRITICAL" and st.since == T0


def test_text_is_not_identity() -> None:
    st, d1 = decide(KeyState(), alert(Status.CRITICAL, pct=91), T0, 4 * H)
    st, d2 = decide(st, alert(Status.CRITICAL, pct=97), T0 + 60, 4 * H)
    assert (d1.kind, d2.kind) == ("alert", None)


def test_subject_does_not_repeat_the_watched_thing() -> None:
    from rtool.notify.channels.notification import Notification, subject

    def subj(key: str, summary: str) -> str:
        return subject(Notification("i", key, "alert", "CRITICAL", summary))

    assert subj("disk:/scratch", "/scratch 91% used") == "[rtool CRITICAL] disk /scratch: 91% used"
    assert subj("job:train", "training stalled") == "[rtool CRITICAL] job train: training stalled"
    assert subj("heartbeat", "no beat for 20m") == "[rtool CRITICAL] heartbeat: no beat for 20m"


def test_to_dict_holds_every_field_as_asdict_would() -> None:
    from dataclasses import asdict

    st = KeyState("CRITICAL", 2, T0, "CRITICAL", T0, "abc", ["email"], 3, "disk full")
    assert st.to_dict() == asdict(st)
    assert st.to_dict()["channels"] is not st.channels  # a copy, as asdict makes
    assert KeyState.from_dict(st.to_dict()) == st
