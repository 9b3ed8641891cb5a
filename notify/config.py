"""[notify] config section (owned by the notify package)."""

from __future__ import annotations

from rtool.config.types import Duration, Section


class EmailConfig(Section):
    host: str
    port: int = 587
    starttls: bool = True
    sender: str
    to: list[str]
    username: str | None = None
    password_env: str | None = None
    password_file: str | None = None
    timeout: Duration = 10.0


class SlackConfig(Section):
    webhook_url_env: str | None = None
    token_env: str | None = None
    channel: str | None = None
    timeout: Duration = 10.0


class NotifyConfig(Section):
    repeat_interval: Duration = 4 * 3600.0
    min_failures: int = 1
    email: EmailConfig | None = None
    slack: SlackConfig | None = None
