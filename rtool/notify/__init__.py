"""Alerts: one module per channel behind one interface; alert state (dedup, repeat, resolve)
and the outbox.

    from rtool.notify.deliver import flush
    from rtool.notify.engine import process
    report = process(alerts, cfg.notify, state)   # decide, queue (before sending), deliver
    report = flush(cfg.notify, state)             # just deliver the outbox

Importing a part of `notify` imports only that part (this file imports nothing): the config
section does not load the engine, and smtplib, slack_sdk and requests load only when a channel
sends.
"""
