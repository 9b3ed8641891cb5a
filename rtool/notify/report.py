"""What one `process` / `flush` call decided and delivered."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtool.notify.decide import Decision


@dataclass
class Delivery:
    channel: str
    item: str  # outbox item id
    key: str
    kind: str
    outcome: str  # sent | queued | failed (permanent, went to fallback) | dropped | busy
    error: str | None = None
    attempts: int = 0


@dataclass
class Report:
    decisions: list[Decision] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    #: items left in the outbox per channel after this call
    queued: dict[str, int] = field(default_factory=dict)

    def by_outcome(self, outcome: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.outcome == outcome]

    @property
    def sent(self) -> dict[str, int]:
        """Notifications the servers accepted in this call, per channel."""
        out: dict[str, int] = {}
        for d in self.by_outcome("sent"):
            out[d.channel] = out.get(d.channel, 0) + 1
        return out

    @property
    def failed(self) -> list[Delivery]:
        """Permanent failures (reported once; the fallback channel got the notification)."""
        return [d for d in self.deliveries if d.outcome in ("failed", "dropped")]

    @property
    def notified(self) -> list[Decision]:
        return [d for d in self.decisions if d.kind]

    @property
    def ok(self) -> bool:
        """True when nothing failed and nothing is left in the outbox."""
        return not self.failed and not any(self.queued.values())

    def lines(self) -> list[str]:
        """A short human summary, one line per channel and per problem."""
        out = [f"{d.key}: {d.kind} ({d.reason})" for d in self.notified]
        channels = sorted({d.channel for d in self.deliveries} | set(self.queued))
        for ch in channels:
            sent = self.sent.get(ch, 0)
            out.append(f"{ch}: sent {sent}, queued {self.queued.get(ch, 0)}")
        for d in self.deliveries:
            if d.error and d.outcome != "sent":
                out.append(f"{d.channel}: {d.outcome} {d.key} ({d.kind}): {d.error}")
        return out
