"""[notify] config section (owned by the notify package).

Secrets are never in the file: each channel names the environment variable (`*_env`) or the
0600 file (`*_file`) that holds them; they are read at send time with `resolve_secret`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rtool.core.config.types import Duration, PositiveDuration, Section

StatusName = Literal["OK", "WARNING", "CRITICAL", "UNKNOWN"]
ChannelName = Literal["email", "slack", "webhook", "log"]
_BAD: list[StatusName] = ["WARNING", "CRITICAL", "UNKNOWN"]


class ChannelSection(Section):
    #: Which statuses this channel receives (alerts, changes, repeats).
    statuses: list[StatusName] = Field(default_factory=lambda: list(_BAD))
    #: Send the resolved notice to this channel when an alert it received is over.
    resolved: bool = True
    #: Timeout of every network call of this channel.
    timeout: PositiveDuration = 10.0


class EmailConfig(ChannelSection):
    host: str
    port: int = Field(587, ge=1, le=65535)
    #: STARTTLS after connecting (port 587).
    starttls: bool = True
    #: Implicit TLS from the first byte (port 465); starttls is then ignored.
    ssl: bool = False
    sender: str
    to: list[str] = Field(min_length=1)
    username: str | None = None
    password_env: str | None = None
    password_file: str | None = None


class SlackConfig(ChannelSection):
    #: Incoming webhook: the env var / 0600 file holding its URL.
    webhook_url_env: str | None = None
    webhook_url_file: str | None = None
    #: Bot token (chat.postMessage to `channel`): the env var / 0600 file holding it.
    token_env: str | None = None
    token_file: str | None = None
    channel: str | None = None
    #: Slack Web API base URL (override for a proxy or a test server).
    api_url: str = "https://slack.com/api/"
    #: Honour a 429 Retry-After up to this long inside one run; longer waits stay in the outbox.
    max_retry_after: Duration = 30.0
    #: In-call retries on connection errors and 5xx (Slack SDK retry handlers).
    retries: int = Field(2, ge=0, le=10)
    #: Pause between those retries.
    retry_interval: Duration = 0.5

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


class WebhookConfig(ChannelSection):
    #: The env var / 0600 file holding the URL the JSON document is POSTed to.
    url_env: str | None = None
    url_file: str | None = None
    #: Extra (non-secret) request headers.
    headers: dict[str, str] = Field(default_factory=dict)
    #: In-call retries on connection errors, 429 and 5xx.
    retries: int = Field(2, ge=0, le=10)
    retry_interval: Duration = 0.5

    @model_validator(mode="after")
    def _url(self) -> WebhookConfig:
        if not (self.url_env or self.url_file):
            raise ValueError("set url_env or url_file (the URL often carries a token)")
        return self


class LogConfig(ChannelSection):
    #: File to append one line per notification to; "-" = stderr, "stdout" = stdout.
    path: str = "-"


class NotifyConfig(Section):
    #: Send again after this long while a key stays not OK ("0" = never repeat).
    repeat_interval: Duration = 4 * 3600.0
    #: Consecutive bad results before the first alert (rides out flapping).
    min_failures: int = Field(1, ge=1)
    #: Channel that gets a notification another channel refused permanently.
    fallback: ChannelName = "log"
    #: Backoff after a temporary failure: retry_backoff, doubling, capped at max_backoff.
    retry_backoff: Duration = 60.0
    max_backoff: Duration = 1800.0
    #: A queued notification older than this is given up on and sent to the fallback.
    max_age: Duration = 2 * 86400.0
    #: How long a run waits for another run that is sending on the same channel.
    lock_timeout: Duration = 30.0
    email: EmailConfig | None = None
    slack: SlackConfig | None = None
    webhook: WebhookConfig | None = None
    log: LogConfig | None = None

    @model_validator(mode="after")
    def _fallback(self) -> NotifyConfig:
        if self.fallback != "log" and getattr(self, self.fallback) is None:
            raise ValueError(f"fallback channel {self.fallback!r} is not configured")
        return self

    def configured(self) -> list[str]:
        """Names of the configured channels (the log channel on stderr when there are none)."""
        names = [n for n in ("email", "slack", "webhook", "log") if getattr(self, n) is not None]
        return names or ["log"]

    def channel(self, name: str) -> ChannelSection:
        """The section of channel `name` (a default stderr log section for an unset `log`)."""
        section = getattr(self, name, None)
        if section is None:
            if name == "log":
                return LogConfig(statuses=["OK", *_BAD])
            raise KeyError(name)
        assert isinstance(section, ChannelSection)
        return section
