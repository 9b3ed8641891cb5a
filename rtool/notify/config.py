"""[notify] config section (owned by the notify package).

Secrets are never in the file: each channel names the environment variable (`*_env`) or the
0600 file (`*_file`) that holds them; they are read at send time with `resolve_secret`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field, create_model, field_validator, model_validator

from rtool.core.config.types import Duration, PositiveDuration, Section
from rtool.core.errors import UsageError
from rtool.notify import channels
from rtool.notify.channels.base import ChannelSection, StatusName
from rtool.notify.silence_store import parse_matcher


def _default_fallback() -> str:
    return next(n for n in channels.names() if channels.unconfigured(n) is not None)


def _known(value: str) -> str:
    if value not in channels.names():
        raise ValueError(f"unknown channel {value!r} (one of {', '.join(channels.names())})")
    return value


ChannelName = Annotated[str, AfterValidator(_known)]


_CRIT: list[StatusName] = ["CRITICAL"]


class EscalationRule(Section):
    """An alert still open `after` this long goes (once per incident) to channel `to` as well
    (rtool/notify/silence_escalate.py); its resolved notice goes there too."""

    after: Duration
    to: ChannelName
    statuses: list[StatusName] = Field(default_factory=lambda: list(_CRIT))
    #: Silence-style matchers on the alert's labels (`check=disk`, `key=~"log:.*"`); all match.
    match: list[str] = Field(default_factory=list)

    @field_validator("match")
    @classmethod
    def _matchers(cls, value: list[str]) -> list[str]:
        for text in value:
            try:
                parse_matcher(text)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        return value

    def matches(self, labels: dict[str, str]) -> bool:
        return all(parse_matcher(t).matches(labels) for t in self.match)


class NotifyBase(Section):
    """The [notify] settings; `NotifyConfig` adds one `[notify.NAME]` section per registered
    channel (rtool/notify/channels/__init__.py)."""

    #: Send again after this long while a key stays not OK ("0" = never repeat).
    repeat_interval: Duration = 4 * 3600.0
    #: Consecutive bad results before the first alert (rides out flapping).
    min_failures: int = Field(1, ge=1)
    #: Channel that gets a notification another channel refused permanently.
    fallback: ChannelName = Field(default_factory=_default_fallback)
    #: Backoff after a temporary failure: retry_backoff, doubling, capped at max_backoff.
    retry_backoff: Duration = 60.0
    max_backoff: Duration = 1800.0
    #: A queued notification older than this is given up on and sent to the fallback.
    max_age: Duration = 2 * 86400.0
    #: How long a run waits for another run that is sending on the same channel.
    lock_timeout: Duration = 30.0
    #: At most this many send attempts per run, and none started after `run_deadline`: a
    #: backlog (a long outage) drains over several runs instead of holding one run for hours.
    max_per_run: int = Field(50, ge=1, le=10000)
    run_deadline: PositiveDuration = 120.0
    #: Escalation rules ([[notify.escalate]]): an alert still open after `after` goes to `to`.
    escalate: list[EscalationRule] = Field(default_factory=list)
    if TYPE_CHECKING:  # the generated channel sections: `notify.email` ...

        def __getattr__(self, name: str) -> Any: ...

    @model_validator(mode="after")
    def _fallback(self) -> NotifyBase:
        rules = [("escalation", r.to) for r in self.escalate]
        for what, name in [("fallback", self.fallback), *rules]:
            if getattr(self, name) is None and channels.unconfigured(name) is None:
                raise ValueError(f"{what} channel {name!r} is not configured")
        return self

    def configured(self) -> list[str]:
        """Names of the configured channels (those that work unconfigured when there are none:
        the log channel on stderr)."""
        names = [n for n in channels.names() if getattr(self, n) is not None]
        return names or [n for n in channels.names() if channels.unconfigured(n) is not None]

    def channel(self, name: str) -> ChannelSection:
        """The section of channel `name` (its `unconfigured` default when the config has none)."""
        section = getattr(self, name, None) or channels.unconfigured(name)
        if section is None:
            raise KeyError(name)
        assert isinstance(section, ChannelSection)
        return section


def notify_config() -> type[NotifyBase]:
    """The [notify] section with one optional `[notify.NAME]` section per channel."""
    fields: dict[str, Any] = {c.name: (c.config | None, None) for c in channels.CHANNELS.all()}
    model: type[NotifyBase] = create_model("NotifyConfig", __base__=NotifyBase, **fields)
    return model


if TYPE_CHECKING:
    NotifyConfig = NotifyBase
else:
    NotifyConfig = notify_config()
