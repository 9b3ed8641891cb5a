"""`process`: alerts in, notifications queued (before any send) and delivered, a report out.

`preview`: what `process` would send for these alerts, written nowhere (`--dry-run`): the same
decisions as `queue` (per-key state, min_failures, repeat, resolve, routing by status, silences,
escalations), computed on the stored state, which is read and never written: no outbox item,
no key state, no silence change, nothing sent.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from rtool.core.alert import Alert, Status
from rtool.core.redact import redact_alert
from rtool.core.state import StateDir
from rtool.notify import fold, silence_escalate
from rtool.notify.channels import DeliveryError, Envelope, build
from rtool.notify.channels.notification import Notification
from rtool.notify.config import NotifyConfig
from rtool.notify.decide import Decision, KeyState, decide
from rtool.notify.deliver import Delivery, Report, flush
from rtool.notify.outbox import Item, Outbox
from rtool.notify.silence_store import Silences, matching, prune

ALERTS_FILE = "notify/alerts.json"


def process(
    alerts: list[Alert],
    cfg: NotifyConfig,
    state: StateDir,
    now: float | None = None,
    *,
    send: bool = True,
) -> Report:
    """Apply per-key alert state to `alerts`, queue what must be sent, then deliver the outbox
    (older items first). `send=False` only queues (a later `flush` delivers)."""
    now = time.time() if now is None else now
    # bounded (outside text: command output, log tails) and no secret leaves in an alert
    alerts = [redact_alert(a.bounded(4)).bounded() for a in alerts]
    report = Report(decisions=queue(alerts, cfg, state, now))
    if send:
        return flush(cfg, state, now, report=report)
    report.queued = Outbox(state).counts()
    return report


def queue(alerts: list[Alert], cfg: NotifyConfig, state: StateDir, now: float) -> list[Decision]:
    """Decide per key and write the notifications to the outbox, then the new key states.

    Notification ids derive from (state epoch, key, version): a run killed between the two
    writes re-decides the same ids next time, so the outbox never holds a duplicate.
    """
    outbox = Outbox(state)
    decisions: dict[int, Decision] = {}
    with state.lock("notify-alerts"), Silences(state).edit() as silences:
        data = _load(state)
        keys: dict[str, Any] = data["keys"]
        silence_escalate.end_expired(cfg, keys, silences, outbox, data["epoch"], now)
        into = fold.folded(alerts)
        ok = {a.key for a in alerts if a.status is Status.OK}
        told: dict[str, KeyState] = {}  # the causes' new states (decided first)
        for seq in fold.causes_first(alerts, into):  # a fold reads its cause's new state
            alert = alerts[seq]
            prev = KeyState.from_dict(keys.get(alert.key))
            new, decision = decide(prev, alert, now, cfg.repeat_interval, cfg.min_failures)
            if alert.key in into:
                cause = told.get(into[alert.key]) or KeyState()
                new = fold.hold(prev, new, decision, into[alert.key], cause, now)
            fold.resolves_with(prev, decision, ok)
            if decision.kind:
                n = _notification(data["epoch"], prev, new, decision, alert, now)
                decision.channels = route(cfg, decision, prev)
                silence = silence_escalate.held_by(silences, decision, n, now)
                if silence is not None:
                    decision.reason += f" (held by silence {silence.id})"
                    decision.channels = []
                for channel in decision.channels:
                    outbox.put(Item(channel, n, now, seq))
                if decision.kind != "resolved":
                    new.incident = n.incident
                    new.channels = sorted(set(new.channels) | set(decision.channels))
            if new.notified is not None and cfg.escalate and alert.key not in into:
                _escalate(cfg, data["epoch"], new, alert, outbox, now, seq)
            keys[alert.key] = new.to_dict()
            decisions[seq] = decision
            told[alert.key] = new
        data["keys"] = {
            k: v for k, v in keys.items() if v.get("status") != "OK" or v.get("version")
        }
        state.write_json(ALERTS_FILE, data, shrink=_drop_oldest_keys)
        silences[:] = prune(silences, now)
    return [decisions[i] for i in range(len(alerts))]


def _drop_oldest_keys(data: dict[str, Any]) -> dict[str, Any] | None:
    """The alert state with its oldest tenth of keys dropped (quiet ones first): the file stays
    under its cap, never moved aside. A dropped key that is still bad alerts again as new."""
    keys: dict[str, Any] = data["keys"]
    if not keys:
        return None

    def age(item: tuple[str, Any]) -> tuple[bool, float]:
        v = item[1] if isinstance(item[1], dict) else {}
        when = v.get("last_sent") or v.get("since") or 0.0
        return (v.get("status") != "OK", when if isinstance(when, (int, float)) else 0.0)

    ordered = sorted(keys.items(), key=age)
    data["keys"] = dict(ordered[max(1, len(ordered) // 10) :])
    return data


def _escalate(
    cfg: NotifyConfig, epoch: str, new: KeyState, alert: Alert, outbox: Outbox, now: float, seq: int
) -> None:
    """Queue the escalations now due for this key (each rule's channel once per incident)."""
    probe = Notification("", alert.key, "escalated", new.status, alert.summary, fields_of(alert))
    for channel, note in silence_escalate.escalate(cfg, new, probe, now):
        new.version += 1
        nid = _nid(epoch, alert.key, new.version)
        n = replace(probe, id=nid, time=now, incident=new.incident or nid, since=new.since)
        outbox.put(Item(channel, n, now, seq, note=note))
        new.channels = sorted({*new.channels, channel})


def route(cfg: NotifyConfig, decision: Decision, prev: KeyState) -> list[str]:
    """Channels for a decision: by status; a resolved notice goes where the incident went."""
    configured = cfg.configured()
    if decision.kind == "resolved":
        return [c for c in prev.channels if c in configured and cfg.channel(c).resolved]
    return [c for c in configured if decision.status in cfg.channel(c).statuses]


def _notification(
    epoch: str, prev: KeyState, new: KeyState, d: Decision, alert: Alert, now: float
) -> Notification:
    nid = _nid(epoch, alert.key, new.version)
    resolved = d.kind == "resolved"
    since = prev.since if resolved else new.since
    return Notification(
        id=nid,
        key=alert.key,
        kind=d.kind or "",
        status=d.status,
        summary=alert.summary,
        fields=fields_of(alert),
        time=now,
        incident=nid if d.kind == "alert" else (prev.incident or nid),
        previous=prev.notified if d.kind in ("changed", "resolved") else None,
        since=since,
        duration=(now - since) if resolved and since is not None else None,
    )


def _nid(epoch: str, key: str, version: int) -> str:
    return hashlib.sha1(f"{epoch}|{key}|{version}".encode()).hexdigest()[:16]


def fields_of(alert: Alert) -> dict[str, str]:
    return {str(k): str(v) for k, v in alert.fields.items()}


def _load(state: StateDir) -> dict[str, Any]:
    data = state.read_json(ALERTS_FILE, {})
    if not isinstance(data, dict) or not isinstance(data.get("keys"), dict):
        data = {"keys": {}}
    # a key whose state is not an object is dropped alone (the others are kept)
    data["keys"] = {str(k): v for k, v in data["keys"].items() if isinstance(v, dict)}
    if not isinstance(data.get("epoch"), str):
        data["epoch"] = uuid.uuid4().hex[:8]
    return data


def key_states(state: StateDir) -> dict[str, KeyState]:
    """The stored state of every key (for `rtool notify status`)."""
    return {k: KeyState.from_dict(v) for k, v in _load(state)["keys"].items()}


def send_test(cfg: NotifyConfig, names: list[str], now: float | None = None) -> list[Delivery]:
    """Send a test notification straight through each channel in `names` (no outbox, no state);
    one Delivery per channel: outcome `sent` or `failed` with the reason."""
    now = time.time() if now is None else now
    nid = f"test-{uuid.uuid4().hex[:12]}"
    n = Notification(
        id=nid,
        key="rtool:test",
        kind="test",
        status="WARNING",
        summary="if you read this, the channel works (sent by `rtool notify test`)",
        time=now,
        incident=nid,
    )
    out = []
    for name in names:
        try:
            outcome, detail = "sent", build(name, cfg).send(Envelope(n)).detail or None
        except DeliveryError as exc:
            outcome, detail = "failed", f"{exc.reason} ({exc.kind})"
        except Exception as exc:  # one channel failing never stops the others
            outcome, detail = "failed", f"unexpected {type(exc).__name__}"
        out.append(Delivery(name, nid, n.key, "test", outcome, detail))
    return out


@dataclass(frozen=True)
class WouldSend:
    """One notification a real run would queue: its kind (alert, changed, repeat, resolved,
    escalated), the alert key, status and summary, and the channels it would go to (none:
    `held` says why)."""

    kind: str
    key: str
    status: str
    summary: str
    channels: tuple[str, ...]
    held: str | None = None

    def line(self) -> str:
        where = ", ".join(self.channels) if self.channels else f"no channel ({self.held})"
        return f"would send {self.kind} {self.status} {self.key} to {where}: {self.summary}"


def preview(alerts: list[Alert], cfg: NotifyConfig, state: StateDir, now: float) -> list[WouldSend]:
    """The notifications `process(alerts, ...)` would queue now; nothing is written."""
    data = _load(state)
    silences = Silences(state).load()
    out: list[WouldSend] = []
    for alert in (redact_alert(a) for a in alerts):
        prev = KeyState.from_dict(data["keys"].get(alert.key))
        new, decision = decide(prev, alert, now, cfg.repeat_interval, cfg.min_failures)
        kind, status = decision.kind or "", decision.status
        n = Notification("dry-run", alert.key, kind, status, alert.summary, fields_of(alert), now)
        if decision.kind:
            channels = route(cfg, decision, prev)
            silence = matching(silences, n, now)
            held = None
            if silence is not None and not (decision.kind == "resolved" and channels):
                held, channels = f"held by silence {silence.id}", []
            elif not channels:
                held = "no channel takes this status"
            out.append(WouldSend(decision.kind, alert.key, decision.status, alert.summary,
                                 tuple(channels), held))  # fmt: skip
            if decision.kind != "resolved":
                new.channels = sorted(set(new.channels) | set(channels))
        if new.notified is not None and cfg.escalate:
            for channel, _note in silence_escalate.escalate(cfg, new, n, now):
                out.append(WouldSend("escalated", alert.key, new.status, alert.summary,
                                     (channel,)))  # fmt: skip
    return out
