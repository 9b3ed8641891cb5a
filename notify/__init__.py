"""Alerts: one module per channel behind one interface; alert state (dedup, repeat, resolve)
and the outbox.

    from notify import process, flush
    report = process(alerts, cfg.notify, state)   # decide, queue (before sending), deliver
    report = flush(cfg.notify, state)             # just deliver the outbox

Importing `notify` is cheap: smtplib, slack_sdk and requests load only when a channel sends.
"""

from __future__ import annotations

# rtool.config's schema imports notify.config: load it first so any import order works.
import rtool.config  # noqa: F401  (isort: skip)
from notify.deliver import flush
from notify.engine import process
from notify.report import Delivery, Report

__all__ = ["Delivery", "Report", "flush", "process"]
