"""Delivering the outbox: per channel, oldest first, one channel's failure never stopping another.

A temporary failure (connection refused, timeout, SMTP 4xx, HTTP 5xx, 429) leaves the item
queued with bounded exponential backoff (`retry_backoff` doubling up to `max_backoff`, at least
Retry-After) and stops that channel for this run, so order is kept. A permanent failure (SMTP
5xx, Slack invalid_auth / channel_not_found, HTTP 404, or older than `max_age`) removes the item,
reports it once and queues it for the fallback channel. Runs sending on the same channel are
serialised by a lock per channel.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from rtool.core.state import StateDir
from rtool.core.units import format_duration
from rtool.notify.channels import Channel, DeliveryError, Envelope, build
from rtool.notify.config import NotifyConfig
from rtool.notify.decide import Decision
from rtool.notify.outbox import Item, Outbox

log = logging.getLogger(__name__)
STATUS_FILE = "notify/channels.json"
THREADS_FILE = "notify/threads.json"
THREAD_TTL = 30 * 86400.0


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
    """What one `process` / `flush` call decided and delivered."""

    decisions: list[Decision] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    #: items left in the outbox per channel after this call
    queued: dict[str, int] = field(default_factory=dict)

    def by_outcome(self, outcome: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.outcome == outcome]

    @property
    def sent(self) -> dict[str, int]:
        """Notifications the servers accepted in this call, per channel."""
        return dict(Counter(d.channel for d in self.by_outcome("sent")))

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
        for ch in sorted({d.channel for d in self.deliveries} | set(self.queued)):
            out.append(f"{ch}: sent {self.sent.get(ch, 0)}, queued {self.queued.get(ch, 0)}")
        for d in self.deliveries:
            if d.error and d.outcome != "sent":
                out.append(f"{d.channel}: {d.outcome} {d.key} ({d.kind}): {d.error}")
        return out


def flush(
    cfg: NotifyConfig,
    state: StateDir,
    now: float | None = None,
    *,
    force: bool = False,
    report: Report | None = None,
) -> Report:
    """Deliver everything queued (items still in backoff wait, unless `force`)."""
    now = time.time() if now is None else now
    report = report if report is not None else Report()
    outbox = Outbox(state)
    pending = {item.channel for item in outbox.items()}
    # the fallback channel goes last: it may receive what the others refused permanently
    order = [*sorted(pending - {cfg.fallback}), cfg.fallback]
    run = _Run(cfg, state, outbox, now, force, report, cfg.max_per_run)
    for name in order:
        _flush_channel(name, run)
    report.queued = outbox.counts()
    return report


@contextlib.contextmanager
def _channel_lock(state: StateDir, name: str, timeout: float) -> Iterator[bool]:
    deadline = time.monotonic() + timeout
    while True:
        with state.lock(f"notify-{name}", blocking=False) as got:
            if got or time.monotonic() >= deadline:
                yield got
                return
        time.sleep(0.05)


@dataclass
class _Run:
    """One flush: what every channel's delivery shares, and what the run may still send (a
    number of attempts, and a deadline on time.monotonic)."""

    cfg: NotifyConfig
    state: StateDir
    outbox: Outbox
    now: float
    force: bool
    report: Report
    left: int
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.cfg.run_deadline

    def why_not(self) -> str | None:
        if self.left <= 0:
            return "this run's send limit (max_per_run) is used up; next run"
        if time.monotonic() >= self.deadline:
            return "this run's deadline (run_deadline) passed; next run"
        return None


def _flush_channel(name: str, run: _Run) -> None:
    with _channel_lock(run.state, name, run.cfg.lock_timeout) as got:
        items = run.outbox.items(name)
        if not got:
            for item in items:
                run.report.deliveries.append(_row(item, "busy", "another run is sending"))
            return
        if items:
            _deliver_items(name, items, run)


def _deliver_items(name: str, items: list[Item], run: _Run) -> None:
    cfg, state, outbox, now, report = run.cfg, run.state, run.outbox, run.now, run.report
    channel: Channel | None = None
    broken: DeliveryError | None = None
    try:
        channel = build(name, cfg)
    except DeliveryError as exc:
        broken = exc
    threads = Threads(state, name)
    status = ChannelStatus(state)
    for index, item in enumerate(items):
        if not run.force and item.next_attempt > now:
            report.deliveries += [_row(i, "queued", i.last_error) for i in items[index:]]
            break
        stop = run.why_not()
        if stop:
            report.deliveries += [_row(i, "queued", stop) for i in items[index:]]
            break
        run.left -= 1
        try:
            if now - item.created > cfg.max_age:
                age = format_duration(now - item.created)
                raise DeliveryError(f"gave up after {age}: {item.last_error}", permanent=True)
            if channel is None:
                raise broken or DeliveryError("channel unavailable", permanent=True)
            env = Envelope(item.notification, item.note, threads.get(item.notification.incident))
            receipt = channel.send(env)
        except Exception as exc:
            err = exc if isinstance(exc, DeliveryError) else _unexpected(exc)
            status.failed(name, err.reason, now)
            if err.permanent:
                _permanent(item, err, run)
                continue
            _temporary(item, err, run)
            report.deliveries.append(_row(item, "queued", err.reason))
            report.deliveries += [
                _row(i, "queued", "waiting behind an older one") for i in items[index + 1 :]
            ]
            break
        outbox.remove(item)
        threads.record(item, receipt.ref, now)
        status.sent(name, now)
        report.deliveries.append(_row(item, "sent", None))
    threads.save()
    status.save()


def _unexpected(exc: Exception) -> DeliveryError:
    log.debug("unexpected error while sending", exc_info=True)
    return DeliveryError(f"unexpected {type(exc).__name__}", permanent=False)


def _temporary(item: Item, err: DeliveryError, run: _Run) -> None:
    item.attempts += 1
    item.last_error = err.reason
    backoff = min(run.cfg.max_backoff, run.cfg.retry_backoff * 2 ** (item.attempts - 1))
    item.next_attempt = run.now + max(backoff, err.retry_after or 0.0)
    run.outbox.update(item)
    log.warning("%s: %s (temporary; kept in the outbox)", item.channel, err.reason)


def _permanent(item: Item, err: DeliveryError, run: _Run) -> None:
    """Report once, hand the notification to the fallback channel, never retry it here."""
    log.error("%s refused %s permanently: %s", item.channel, item.notification.key, err.reason)
    run.outbox.remove(item)
    fallback = run.cfg.fallback
    if item.channel == fallback or item.fallback_from:
        run.report.deliveries.append(_row(item, "dropped", err.reason))
        return
    run.report.deliveries.append(_row(item, "failed", err.reason))
    note = f"{item.channel} refused this permanently: {err.reason}"
    moved = Item(
        fallback, item.notification, run.now, item.seq, note=note, fallback_from=item.channel
    )
    run.outbox.put(moved)


def _row(item: Item, outcome: str, error: str | None) -> Delivery:
    n = item.notification
    return Delivery(item.channel, item.id, n.key, n.kind, outcome, error, item.attempts)


class Threads:
    """Per channel: the server's reference of each incident's first message (Slack ts)."""

    def __init__(self, state: StateDir, channel: str) -> None:
        self.state, self.channel = state, channel
        self.data: dict[str, dict[str, list]] = _threads(state.read_json(THREADS_FILE, {}))
        self.dirty = False

    def get(self, incident: str) -> str | None:
        entry = self.data.get(self.channel, {}).get(incident)
        return str(entry[0]) if entry else None

    def record(self, item: Item, ref: str | None, now: float) -> None:
        n = item.notification
        table = self.data.setdefault(self.channel, {})
        if ref and n.id == n.incident:
            table[n.incident] = [ref, now]
            self.dirty = True
        elif n.kind == "resolved" and n.incident in table:
            del table[n.incident]
            self.dirty = True
        for inc in [i for i, (_, t) in table.items() if now - t > THREAD_TTL]:
            del table[inc]

    def save(self) -> None:
        if self.dirty:
            with self.state.lock("notify-threads"):
                data = _threads(self.state.read_json(THREADS_FILE, {}))
                data[self.channel] = self.data.get(self.channel, {})
                self.state.write_json(THREADS_FILE, data)


def _threads(data: object) -> dict[str, dict[str, list]]:
    """channel -> incident -> [ref, time], entries of the wrong type dropped one by one."""
    out: dict[str, dict[str, list]] = {}
    for channel, table in (data if isinstance(data, dict) else {}).items():
        if isinstance(table, dict):
            out[str(channel)] = {
                str(k): v
                for k, v in table.items()
                if isinstance(v, list)
                and len(v) == 2
                and isinstance(v[1], (int, float))
                and not isinstance(v[1], bool)
            }
    return out


class ChannelStatus:
    """Last delivery and last error per channel (`rtool notify status`)."""

    def __init__(self, state: StateDir) -> None:
        self.state = state
        self.changes: dict[str, dict[str, object]] = {}

    def sent(self, name: str, now: float) -> None:
        entry = self.changes.setdefault(name, {"sent": 0})
        entry["last_ok"] = now
        entry["sent"] = int(entry.get("sent", 0) or 0) + 1  # type: ignore[call-overload]

    def failed(self, name: str, reason: str, now: float) -> None:
        entry = self.changes.setdefault(name, {"sent": 0})
        entry["last_error"] = reason
        entry["last_error_time"] = now

    def save(self) -> None:
        if not self.changes:
            return
        with self.state.lock("notify-status"):
            data = read_status(self.state)
            for name, change in self.changes.items():
                entry = data.setdefault(name, {})
                sent = int(entry.get("sent", 0)) + int(change.pop("sent", 0))  # type: ignore[call-overload]
                entry.update(change, sent=sent)
            self.state.write_json(STATUS_FILE, data)


def read_status(state: StateDir) -> dict[str, dict[str, object]]:
    """Per channel its status; entries of the wrong type are dropped one by one (a state file
    someone edited never makes a delivery fail)."""
    data = state.read_json(STATUS_FILE, {})
    out: dict[str, dict[str, object]] = {}
    for name, entry in (data if isinstance(data, dict) else {}).items():
        if not isinstance(entry, dict):
            continue
        sent = entry.get("sent", 0)
        ok = isinstance(sent, int) and not isinstance(sent, bool)
        out[str(name)] = {**entry, "sent": sent if ok else 0}
    return out
