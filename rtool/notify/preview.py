"""`preview`: what `process` would send for these alerts, written nowhere (`--dry-run`).

The same decisions as `engine.queue` (per-key state, min_failures, repeat, resolve, routing by
status, silences, escalations), computed on the stored state, which is read and never written:
no outbox item, no key state, no silence change, nothing sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtool.core.alert import Alert
from rtool.core.redact import redact_alert
from rtool.core.state import StateDir
from rtool.notify import silence_escalate
from rtool.notify.channels.notification import Notification
from rtool.notify.config import NotifyConfig
from rtool.notify.decide import KeyState, decide
from rtool.notify.engine import _load, fields_of, route
from rtool.notify.silence_store import Silences, matching


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
