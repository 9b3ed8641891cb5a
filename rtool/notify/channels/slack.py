"""The Slack channel (slack_sdk): an incoming webhook, or a bot token and chat.postMessage.

Block Kit message (header, summary, fields, a context line with key and host) plus the `text`
fallback. Retry handlers: connection errors and 500/503 (`retries` times, `retry_interval`
apart) and 429 honouring Retry-After up to `max_retry_after`; a longer wait is left to the
outbox. With a bot token the resolved notice goes into the thread of the incident's first
message. Sent means: webhook HTTP 200 `ok`, API `"ok": true`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import model_validator

from rtool.core.config.fields import setting
from rtool.core.config.types import Duration
from rtool.notify.channels.base import (
    ChannelSection,
    DeliveryError,
    Envelope,
    Receipt,
    channel_secret,
    describe,
    scrub,
    scrubbed_logs,
)
from rtool.notify.channels.notification import Notification, all_fields, headline, subject

if TYPE_CHECKING:
    from slack_sdk.http_retry import RetryHandler

#: Slack API errors worth retrying later; every other `ok: false` error is permanent.
TEMPORARY_ERRORS = {
    "ratelimited",
    "rate_limited",
    "service_unavailable",
    "fatal_error",
    "internal_error",
    "request_timeout",
}
_EMOJI = {"CRITICAL": "🔴", "WARNING": "🟠", "UNKNOWN": "⚪", "RESOLVED": "✅", "TEST": "🔔"}
_LOGGERS = ["rtool.notify.channels.slack.sdk", "urllib3.connectionpool"]


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def blocks(env: Envelope) -> list[dict[str, Any]]:
    """The Block Kit message of a notification."""
    n: Notification = env.notification
    head = f"{_EMOJI.get(n.label, '')} {subject(n)}".strip()
    out: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": head[:150], "emoji": True}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _esc(headline(n))[:3000]}},
    ]
    fields = [(k, v) for k, v in all_fields(n) if k not in ("key", "host")]
    if fields:
        out.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": f"*{_esc(k)}*\n{_esc(v)}"[:2000]}
                    for k, v in fields[:10]
                ],
            }
        )
    context = f"key `{_esc(n.key)}` · host {_esc(n.fields.get('host', n.host))}"
    if env.note:
        context += f" · {_esc(env.note)}"
    out.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context[:3000]}]})
    return out


def retry_handlers(cfg: SlackConfig) -> list[RetryHandler]:
    from slack_sdk.http_retry.builtin_handlers import (
        ConnectionErrorRetryHandler,
        RateLimitErrorRetryHandler,
        ServerErrorRetryHandler,
    )
    from slack_sdk.http_retry.builtin_interval_calculators import (
        FixedValueRetryIntervalCalculator,
    )

    class BoundedRateLimit(RateLimitErrorRetryHandler):
        """Honour Retry-After only when it is short; a long wait goes back to the outbox."""

        def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None):  # type: ignore[no-untyped-def]
            if response is None or response.status_code != 429:
                return False
            return _retry_after(response.headers) <= cfg.max_retry_after

    pause = FixedValueRetryIntervalCalculator(cfg.retry_interval)
    return [
        ConnectionErrorRetryHandler(max_retry_count=cfg.retries, interval_calculator=pause),
        ServerErrorRetryHandler(max_retry_count=cfg.retries, interval_calculator=pause),
        BoundedRateLimit(max_retry_count=1),
    ]


def _retry_after(headers: Any) -> float:
    for name, value in dict(headers or {}).items():
        if name.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) else value
            try:
                return float(raw)
            except (TypeError, ValueError):
                return 1.0
    return 1.0


class SlackConfig(ChannelSection):
    webhook_url_env: str | None = setting(None, "Incoming webhook: the env var holding its URL.")
    webhook_url_file: str | None = setting(None, "... or the 0600 file holding it.")
    token_env: str | None = setting(
        None, "Bot token (chat.postMessage to `channel`): the env var holding it."
    )
    token_file: str | None = setting(None, "... or the 0600 file holding it.")
    channel: str | None = setting(None, "The channel a bot token posts to (#alerts).")
    api_url: str = setting(
        "https://slack.com/api/", "Slack Web API base URL (a proxy or a test server)."
    )
    max_retry_after: Duration = setting(
        30.0, "Honour a 429 Retry-After up to this long in one run; longer: the outbox."
    )
    retries: int = setting(
        2, "In-call retries on connection errors and 5xx (Slack SDK retry handlers).", ge=0, le=10
    )
    retry_interval: Duration = setting(0.5, "Pause between those retries.")

    @model_validator(mode="after")
    def _mode(self) -> SlackConfig:
        hook = bool(self.webhook_url_env or self.webhook_url_file)
        bot = bool(self.token_env or self.token_file)
        if hook == bot:
            raise ValueError(
                "set either webhook_url_env/webhook_url_file or token_env/token_file (not both)"
            )
        if bot and not self.channel:
            raise ValueError('a bot token needs `channel` (e.g. "#alerts" or a channel id)')
        return self


class SlackChannel:
    """Slack, by incoming webhook or bot token (a bot threads resolved notices)."""

    name = "slack"
    config = SlackConfig

    def __init__(self, cfg: SlackConfig) -> None:
        self.cfg = cfg

    def _secret(self) -> tuple[str, str]:
        cfg = self.cfg
        if cfg.webhook_url_env or cfg.webhook_url_file:
            hook = channel_secret(cfg.webhook_url_env, cfg.webhook_url_file, "slack webhook")
            return "webhook", hook or ""
        token = channel_secret(cfg.token_env, cfg.token_file, "slack token")
        return "token", token or ""

    def send(self, envelope: Envelope) -> Receipt:
        mode, secret = self._secret()
        # the SDK logs every failed try at ERROR; the outbox reports the outcome once
        debug = logging.getLogger().isEnabledFor(logging.DEBUG)
        logging.getLogger(_LOGGERS[0]).setLevel(logging.NOTSET if debug else logging.CRITICAL)
        with scrubbed_logs(_LOGGERS, [secret]) as logger:
            try:
                if mode == "webhook":
                    return self._webhook(secret, envelope, logger)
                return self._api(secret, envelope, logger)
            except DeliveryError:
                raise
            except Exception as exc:  # urllib errors, timeouts, bad JSON: all temporary
                reason = scrub(describe(exc), [secret])
                raise DeliveryError(reason[:300], permanent=False) from None

    def _webhook(self, url: str, env: Envelope, logger: Any) -> Receipt:
        from slack_sdk.webhook import WebhookClient

        client = WebhookClient(
            url, timeout=int(max(1, self.cfg.timeout)), logger=logger,
            retry_handlers=retry_handlers(self.cfg),
        )  # fmt: skip
        resp = client.send(text=subject(env.notification), blocks=blocks(env))
        if resp.status_code == 200 and resp.body.strip() == "ok":
            return Receipt(detail="ok")
        return self._fail(resp.status_code, resp.body.strip()[:100], resp.headers)

    def _api(self, token: str, env: Envelope, logger: Any) -> Receipt:
        from slack_sdk import WebClient
        from slack_sdk.errors import SlackApiError

        client = WebClient(
            token=token, base_url=self.cfg.api_url, timeout=int(max(1, self.cfg.timeout)),
            logger=logger, retry_handlers=retry_handlers(self.cfg),
        )  # fmt: skip
        n = env.notification
        thread = env.thread if n.kind == "resolved" else None
        try:
            resp = client.chat_postMessage(
                channel=self.cfg.channel or "",
                text=subject(n),
                blocks=blocks(env),
                thread_ts=thread,
                reply_broadcast=bool(thread),
            )
        except SlackApiError as exc:
            r = exc.response
            error = str(r.get("error", "")) if isinstance(r.data, dict) else ""
            return self._fail(r.status_code, error or "non-JSON answer", r.headers)
        return Receipt(ref=str(resp.get("ts") or "") or None, detail="ok")

    def _fail(self, status: int, error: str, headers: Any) -> Receipt:
        reason = f"Slack answered HTTP {status}" + (f" {error}" if error else "")
        if status == 429:
            raise DeliveryError(reason, permanent=False, retry_after=_retry_after(headers))
        temporary = status >= 500 or error in TEMPORARY_ERRORS
        raise DeliveryError(reason, permanent=not temporary)
