"""The PagerDuty channel: Events API v2 (`POST /v2/enqueue`).

An alert, a change, a repeat or an escalation is a `trigger`, a resolved notice a `resolve`,
both with `dedup_key` = rtool's alert key (`disk:/scratch`), so PagerDuty keeps one incident
per key and the resolve closes it. Silence summaries are not sent (PagerDuty takes alerts).
`rtool notify test pagerduty` triggers a test event and resolves it at once.

Sent means HTTP 202 (`{"status": "success", ...}`). 429 and 5xx (and connection errors) are
retried in the call `retries` times, waiting `retry_interval` doubling (at least Retry-After),
each wait capped at `max_retry_wait`; then the event stays in the outbox. 400 ("invalid event")
and other 4xx are permanent. The routing key comes from the env var or 0600 file named in the
config and never appears in a message or log.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from pydantic import model_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration
from rtool.notify.channels.base import (
    ChannelSection,
    DeliveryError,
    Envelope,
    Receipt,
    channel_secret,
    http_refused,
    scrub,
    scrubbed_logs,
    unreachable,
)
from rtool.notify.channels.notification import all_fields, subject, what

SEVERITY = {"CRITICAL": "critical", "WARNING": "warning", "UNKNOWN": "error", "OK": "info"}
TRIGGERS = ("alert", "changed", "repeat", "escalated", "test")
MAX_SUMMARY = 1024
MAX_DEDUP = 255


class PagerDutyConfig(ChannelSection):
    """[notify.pagerduty]: PagerDuty Events API v2."""

    routing_key_env: str | None = setting(
        None, "The env var holding the integration's routing key (never printed)."
    )
    routing_key_file: str | None = setting(None, "... or the 0600 file holding it.")
    url: str = setting(
        "https://events.pagerduty.com/v2/enqueue",
        "Events API v2 endpoint (a proxy or a test server).",
    )
    source: str | None = setting(None, "`payload.source` (left out: this host's name).")
    retries: int = setting(
        3, "In-call retries on connection errors, 429 and 5xx, waits doubling.", ge=0, le=10
    )
    retry_interval: Duration = setting(1.0, "The first wait between those retries.")
    max_retry_wait: Duration = setting(
        30.0, "Each wait capped at this; past the retries the event stays in the outbox."
    )

    @model_validator(mode="after")
    def _key(self) -> PagerDutyConfig:
        if not (self.routing_key_env or self.routing_key_file):
            raise ValueError("set routing_key_env or routing_key_file")
        return self


def event(env: Envelope, routing_key: str, source: str, action: str) -> dict[str, Any]:
    """The Events v2 document for one notification."""
    n = env.notification
    dedup = (f"{n.key}:{n.id}" if n.kind == "test" else n.key)[:MAX_DEDUP]
    doc: dict[str, Any] = {"routing_key": routing_key, "event_action": action, "dedup_key": dedup}
    if action != "trigger":
        return doc
    details = dict(all_fields(n))
    if env.note:
        details["note"] = env.note
    check, thing = what(n.key)
    doc["payload"] = {
        "summary": subject(n)[:MAX_SUMMARY],
        "source": source or n.host,
        "severity": SEVERITY.get(n.status, "error"),
        "timestamp": datetime.fromtimestamp(n.time or time.time(), timezone.utc).isoformat(),
        "component": thing or check,
        "class": check or "rtool",
        "custom_details": details,
    }
    doc["client"] = "rtool"
    return doc


class PagerDutyChannel:
    """PagerDuty Events API v2: trigger on an alert, resolve when it is over."""

    name = "pagerduty"
    config = PagerDutyConfig

    def __init__(self, cfg: PagerDutyConfig, sleep: Any = time.sleep) -> None:
        self.cfg = cfg
        self._sleep = sleep

    def send(self, envelope: Envelope) -> Receipt:
        n = envelope.notification
        if n.kind not in (*TRIGGERS, "resolved"):
            return Receipt(detail=f"not sent: PagerDuty takes alerts, not {n.kind} notices")
        key = channel_secret(self.cfg.routing_key_env, self.cfg.routing_key_file, "routing key")
        if not key:
            raise DeliveryError("routing key: not set", permanent=True)
        source = self.cfg.source or n.host
        action = "resolve" if n.kind == "resolved" else "trigger"
        with scrubbed_logs(["urllib3.connectionpool"], [key]):
            receipt = self._post(event(envelope, key, source, action), key)
            if n.kind == "test":  # leave no test incident open
                self._post(event(envelope, key, source, "resolve"), key)
        return receipt

    def _post(self, doc: dict[str, Any], key: str) -> Receipt:
        last: DeliveryError | None = None
        for attempt in range(self.cfg.retries + 1):
            if last is not None:
                wait = self.cfg.retry_interval * 2 ** (attempt - 1)
                wait = min(self.cfg.max_retry_wait, max(wait, last.retry_after or 0.0))
                self._sleep(wait)
            try:
                return self._once(doc, key)
            except DeliveryError as exc:
                if exc.permanent:
                    raise
                last = exc
        assert last is not None
        raise last

    def _once(self, doc: dict[str, Any], key: str) -> Receipt:
        import requests

        try:
            resp = requests.post(self.cfg.url, json=doc, timeout=self.cfg.timeout)
        except requests.RequestException as exc:
            raise unreachable(exc, [key]) from None
        answer = _json(resp)
        if resp.status_code == 202:
            return Receipt(ref=str(answer.get("dedup_key") or doc["dedup_key"]), detail="HTTP 202")
        detail = "; ".join(str(e) for e in answer.get("errors") or []) or answer.get("message")
        reason = f"PagerDuty answered HTTP {resp.status_code}" + (f": {detail}" if detail else "")
        reason = scrub(reason, [key])[:300]
        temporary = resp.status_code == 429 or resp.status_code >= 500
        raise http_refused(reason, resp, temporary=temporary)


def _json(resp: Any) -> dict[str, Any]:
    try:
        data = resp.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
