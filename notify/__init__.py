"""Alerts: one module per channel behind one interface; alert state (dedup, repeat, resolve)
and the outbox."""
