"""What silences and escalation rules do to the decisions of one notify run (engine.queue).

Silenced: a notification that matches a silence in force is held on the silence instead of
queued. A resolved notice for an incident that reached a channel is never held (it closes
what was open); one whose incident was held is held too (the summary tells it).

Silence end: once, the channels the held notifications would have reached get one summary
(`kind` summary: what was held, what is still open, what resolved meanwhile), and every held
key still not OK is reopened, so the next run alerts it as new (and its resolved notice later
closes it).

Escalation: a key still not OK after a rule's `after`, whose incident reached a channel, goes
once to the rule's channel (`kind` escalated); its resolved notice goes there too.
"""

from __future__ import annotations

import hashlib
from typing import Any

from rtool.core.alert import Status
from rtool.core.units import format_duration
from rtool.notify.channels.notification import Notification
from rtool.notify.config import NotifyConfig
from rtool.notify.decide import Decision, KeyState
from rtool.notify.outbox import Item, Outbox
from rtool.notify.silence_store import Silence, hold, labels_of, matching


def held_by(
    silences: list[Silence], decision: Decision, n: Notification, now: float
) -> Silence | None:
    """Hold `n` on the matching silence in force (returns it), or None: send as usual."""
    if decision.kind == "resolved" and decision.channels:
        return None
    silence = matching(silences, n, now)
    if silence is not None:
        hold(silence, n, decision.channels)
    return silence


def end_expired(
    cfg: NotifyConfig,
    keys: dict[str, Any],
    silences: list[Silence],
    outbox: Outbox,
    epoch: str,
    now: float,
) -> list[Notification]:
    """Process every silence that ended since the last run; returns the summaries queued."""
    out = []
    configured = set(cfg.configured())
    for s in silences:
        if s.summarized or s.ends > now:
            continue
        s.summarized = True
        if not s.held and not s.dropped:
            continue
        n = summary(s, keys, epoch, now)
        channels = sorted({c for h in s.held for c in h.get("channels") or []} & configured)
        for channel in channels or [cfg.fallback]:
            outbox.put(Item(channel, n, now, seq=-1))  # before this run's alerts
        _reopen(keys, s)
        out.append(n)
    return out


def summary(s: Silence, keys: dict[str, Any], epoch: str, now: float) -> Notification:
    held = [Notification.from_dict(h["notification"]) for h in s.held if "notification" in h]
    open_keys = sorted({n.key for n in held if KeyState.from_dict(keys.get(n.key)).status != "OK"})
    resolved = sorted({n.key for n in held} - set(open_keys))
    statuses = [
        Status[n.status] for n in held if n.key in open_keys and n.status in Status.__members__
    ]
    worst = max(statuses, key=lambda st: st.severity, default=Status.OK)
    count = len(held) + s.dropped
    text = (
        f"silence {s.id} ({s.describe()}) ended after {format_duration(now - s.starts)}: "
        f"held {count} notification{'s' if count != 1 else ''}"
    )
    text += f"; still open: {', '.join(open_keys)}" if open_keys else "; nothing still open"
    if resolved:
        text += f"; resolved meanwhile: {', '.join(resolved)}"
    fields = {"silence": s.id, "matchers": s.describe(), "held": str(count)}
    if s.reason:
        fields["reason"] = s.reason
    nid = hashlib.sha1(f"{epoch}|silence:{s.id}|summary".encode()).hexdigest()[:16]
    return Notification(
        id=nid,
        key=f"silence:{s.id}",
        kind="summary",
        status=worst.name,
        summary=text,
        fields=fields,
        time=now,
        incident=nid,
        since=s.starts,
        duration=now - s.starts,
    )


def _reopen(keys: dict[str, Any], s: Silence) -> None:
    """Held keys still not OK alert again on the next run (nothing reached a channel)."""
    for h in s.held:
        key = str(h.get("notification", {}).get("key", ""))
        state = KeyState.from_dict(keys.get(key))
        if key and state.status != "OK" and not state.channels:
            state.notified, state.last_sent = None, None
            keys[key] = state.to_dict()


def escalate(
    cfg: NotifyConfig, new: KeyState, labels_from: Notification, now: float
) -> list[tuple[str, str]]:
    """(channel, note) for every escalation rule now due for this key (at most once each)."""
    if new.notified is None or new.since is None or not new.channels:
        return []
    out: list[tuple[str, str]] = []
    labels = labels_of(labels_from)
    for rule in cfg.escalate:
        if rule.to in new.channels or new.status not in rule.statuses:
            continue
        if now - new.since < rule.after or not rule.matches(labels):
            continue
        note = (
            f"escalated to {rule.to}: still {new.status} after "
            f"{format_duration(now - new.since)} (rule: after {format_duration(rule.after)})"
        )
        out.append((rule.to, note))
    return out
