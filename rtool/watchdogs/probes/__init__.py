"""Probe helpers: filesystem probes run in a child process that can be abandoned on timeout."""
