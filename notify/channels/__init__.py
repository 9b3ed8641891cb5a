"""The channels: one module each behind `Channel` (base.py), listed in an explicit registry.

Heavy libraries (smtplib, slack_sdk, requests) are imported only when a channel sends.
"""

from __future__ import annotations

from collections.abc import Callable

from notify.channels.base import Channel, DeliveryError, Envelope, Receipt
from notify.config import NotifyConfig


def _email(cfg: NotifyConfig) -> Channel:
    from notify.channels.email import EmailChannel

    assert cfg.email is not None
    return EmailChannel(cfg.email)


def _slack(cfg: NotifyConfig) -> Channel:
    from notify.channels.slack import SlackChannel

    assert cfg.slack is not None
    return SlackChannel(cfg.slack)


def _webhook(cfg: NotifyConfig) -> Channel:
    from notify.channels.webhook import WebhookChannel

    assert cfg.webhook is not None
    return WebhookChannel(cfg.webhook)


def _log(cfg: NotifyConfig) -> Channel:
    from notify.channels.log import LogChannel, LogConfig

    section = cfg.channel("log")
    assert isinstance(section, LogConfig)
    return LogChannel(section)


REGISTRY: dict[str, Callable[[NotifyConfig], Channel]] = {
    "email": _email,
    "slack": _slack,
    "webhook": _webhook,
    "log": _log,
}


def build(name: str, cfg: NotifyConfig) -> Channel:
    """The channel `name` built from `cfg` (DeliveryError when it is not configured)."""
    if name not in REGISTRY:
        raise DeliveryError(f"unknown channel {name!r}", permanent=True)
    if name != "log" and getattr(cfg, name) is None:
        raise DeliveryError(f"channel {name!r} is no longer configured", permanent=True)
    return REGISTRY[name](cfg)


__all__ = ["REGISTRY", "Channel", "DeliveryError", "Envelope", "Receipt", "build"]
