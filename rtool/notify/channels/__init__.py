"""The channels: one module each (the channel class and its config section) behind `Channel`
(base.py), listed in the explicit registry below. Adding one is a module and one line in
`LINES`: the `[notify.NAME]` config section, `fallback`, `rtool notify test --channel NAME`,
delivery and the channel table of docs/notify.md all come from the registry.

Heavy libraries (smtplib, slack_sdk, requests) are imported only when a channel sends.
"""

from __future__ import annotations

from typing import Any

from rtool.core.registry import Registry
from rtool.notify.channels.base import Channel, ChannelSection, DeliveryError, Envelope, Receipt

#: The channels, in the order `configured()` lists them: name -> "module:Class".
LINES: dict[str, str] = {
    "email": "rtool.notify.channels.email:EmailChannel",
    "slack": "rtool.notify.channels.slack:SlackChannel",
    "webhook": "rtool.notify.channels.webhook:WebhookChannel",
    "pagerduty": "rtool.notify.channels.pagerduty:PagerDutyChannel",
    "log": "rtool.notify.channels.log:LogChannel",
}

CHANNELS: Registry[type[Any]] = Registry("channel", LINES)


def names() -> list[str]:
    return CHANNELS.names()


def by_name(name: str) -> type[Any] | None:
    return CHANNELS.get(name)


def unconfigured(name: str) -> ChannelSection | None:
    """The section channel `name` works with when the config has none (None: it needs one)."""
    cls = by_name(name)
    return getattr(cls, "unconfigured", None) if cls is not None else None


def build(name: str, cfg: Any) -> Channel:
    """The channel `name` built from the [notify] section `cfg` (DeliveryError when it is not
    configured)."""
    cls = by_name(name)
    if cls is None:
        raise DeliveryError(f"unknown channel {name!r}", permanent=True)
    section = getattr(cfg, name, None) or unconfigured(name)
    if section is None:
        raise DeliveryError(f"channel {name!r} is no longer configured", permanent=True)
    return cls(section)


__all__ = [
    "CHANNELS",
    "Channel",
    "ChannelSection",
    "DeliveryError",
    "Envelope",
    "Receipt",
    "build",
    "by_name",
    "names",
]
