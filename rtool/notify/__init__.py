"""Alerts: one module per channel behind one interface; alert state (dedup, repeat, resolve)
and the outbox.

    from rtool.notify import process, flush
    report = process(alerts, cfg.notify, state)   # decide, queue (before sending), deliver
    report = flush(cfg.notify, state)             # just deliver the outbox

Importing `notify` is cheap (the names above load on first use; smtplib, slack_sdk and
requests only when a channel sends).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rtool.notify.deliver import flush
    from rtool.notify.engine import process
    from rtool.notify.report import Delivery, Report

__all__ = ["Delivery", "Report", "flush", "process"]


def __getattr__(name: str) -> Any:
    if name == "process":
        from rtool.notify.engine import process

        return process
    if name == "flush":
        from rtool.notify.deliver import flush

        return flush
    if name in ("Delivery", "Report"):
        from rtool.notify import report

        return getattr(report, name)
    raise AttributeError(f"module 'rtool.notify' has no attribute {name!r}")
