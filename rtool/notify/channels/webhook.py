"""The webhook channel: `requests` POST of a JSON document (schema `rtool.notification/1`).

Sent means HTTP 2xx. Connection errors, timeouts and 5xx are retried `retries` times in the
call and then left in the outbox; 429 is left in the outbox until its Retry-After has passed;
other 4xx are permanent.

The document:
    {"schema": "rtool.notification/1", "id": "...", "kind": "alert|changed|repeat|resolved|test",
     "key": "disk:/scratch", "status": "CRITICAL", "previous": null, "summary": "...",
     "title": "[rtool CRITICAL] disk /scratch: ...", "fields": {...}, "host": "...",
     "time": 1714557600.0, "since": ..., "duration": null, "incident": "...", "note": null}
"""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration
from rtool.notify.channels.base import (
    ChannelSection,
    Envelope,
    Receipt,
    channel_secret,
    http_refused,
    scrubbed_logs,
    unreachable,
)
from rtool.notify.channels.notification import subject

SCHEMA = "rtool.notification/1"


def document(env: Envelope) -> dict[str, Any]:
    """The schema's keys are the Notification's fields plus schema, title and note."""
    n = env.notification
    return {"schema": SCHEMA, **n.to_dict(), "title": subject(n), "note": env.note}


class WebhookConfig(ChannelSection):
    url_env: str | None = setting(
        None, "The env var holding the URL the JSON document is POSTed to."
    )
    url_file: str | None = setting(None, "... or the 0600 file holding it.")
    headers: dict[str, str] = setting(
        default_factory=dict, help="Extra (non-secret) request headers."
    )
    retries: int = setting(2, "In-call retries on connection errors, 429 and 5xx.", ge=0, le=10)
    retry_interval: Duration = setting(0.5, "Pause before the first retry (doubling).")

    @model_validator(mode="after")
    def _url(self) -> WebhookConfig:
        if not (self.url_env or self.url_file):
            raise ValueError("set url_env or url_file (the URL often carries a token)")
        return self


class WebhookChannel:
    """A JSON document (schema rtool.notification/1) POSTed to any URL."""

    name = "webhook"
    config = WebhookConfig

    def __init__(self, cfg: WebhookConfig) -> None:
        self.cfg = cfg

    def send(self, envelope: Envelope) -> Receipt:
        url = channel_secret(self.cfg.url_env, self.cfg.url_file, "webhook url") or ""
        with scrubbed_logs(["urllib3.connectionpool", "urllib3.util.retry"], [url]):
            try:
                resp = self._session().post(
                    url, json=document(envelope), headers=self.cfg.headers, timeout=self.cfg.timeout
                )
            except Exception as exc:  # requests.RequestException and friends: temporary
                raise unreachable(exc, [url]) from None
        if 200 <= resp.status_code < 300:
            return Receipt(detail=f"HTTP {resp.status_code}")
        reason = f"webhook answered HTTP {resp.status_code}"
        temporary = resp.status_code in (408, 429) or resp.status_code >= 500
        raise http_refused(reason, resp, temporary=temporary)

    def _session(self) -> Any:
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        retry = Retry(
            total=self.cfg.retries,
            backoff_factor=self.cfg.retry_interval,
            status_forcelist=(500, 502, 503, 504),
            allowed_methods=None,
            respect_retry_after_header=False,
            raise_on_status=False,
        )
        session = requests.Session()
        session.mount("http://", HTTPAdapter(max_retries=retry))
        session.mount("https://", HTTPAdapter(max_retries=retry))
        return session
