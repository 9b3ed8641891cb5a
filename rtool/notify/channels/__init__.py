"""The channels: one module each (the channel class and its config section) behind `Channel`
(base.py), listed in the explicit registry below. Adding one is a module and one line here:
the `[notify.NAME]` config section, `fallback`, `rtool notify test --channel NAME` and
delivery all come from the registry.

Heavy libraries (smtplib, slack_sdk, requests) are imported only when a channel sends.
"""

from __future__ import annotations

from typing import Any

from rtool.notify.channels.base import Channel, ChannelSection, DeliveryError, Envelope, Receipt
from rtool.notify.channels.email import EmailChannel
from rtool.notify.channels.log import LogChannel
from rtool.notify.channels.pagerduty import PagerDutyChannel
from rtool.notify.channels.slack import SlackChannel
from rtool.notify.channels.webhook import WebhookChannel

#: The channel classes, in the order `configured()` lists them.
REGISTRY: tuple[type[Any], ...] = (
    EmailChannel,
    SlackChannel,
    WebhookChannel,
    PagerDutyChannel,
    LogChannel,
)


def names() -> list[str]:
    return [c.name for c in REGISTRY]


def by_name(name: str) -> type[Any] | None:
    return next((c for c in REGISTRY if c.name == name), None)


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
    channel: Channel = cls(section)
    return channel


__all__ = [
    "REGISTRY",
    "Channel",
    "ChannelSection",
    "DeliveryError",
    "Envelope",
    "Receipt",
    "build",
    "by_name",
    "names",
]
