"""How an attempt ended, as a cause of lost time: Slurm's final state, the shim's stop reason
and the failure signature (rtool.runs.losses sums them up, the timeline page colours them).

A hang is an attempt the shim stopped as unresponsive, or one requeued while it ran (rtool's
`--on-hang requeue`, or a person) without the shim's own stop.
"""

from __future__ import annotations

import enum

from rtool.runs.model import Attempt


class Cause(str, enum.Enum):
    """How an attempt ended (its colour and mark on the timeline)."""

    FINISHED = "finished"
    RUNNING = "running"
    PENDING = "pending"
    TIME_LIMIT = "time limit"
    PREEMPTED = "preempted"
    NODE_FAILURE = "node failure"
    HANG = "hang"
    CRASH = "crash"
    CANCELLED = "cancelled"
    ENDED = "ended"  # nothing says why (degraded mode without an end record)


_NODE_SIGNATURES = frozenset({"node-fail", "boot-fail"})
_HANG_STOPS = frozenset({"unresponsive", "hang"})


def cause_of(a: Attempt) -> Cause:
    """The cause of an attempt's end; an attempt that has not ended is running or pending."""
    if not a.is_over:
        return Cause.PENDING if a.state == "PENDING" or a.started is None else Cause.RUNNING
    stop = a.stop_reason or ""
    sig = a.signature.name if a.signature else ""
    if a.finished:
        return Cause.FINISHED
    if stop == "time_limit" or a.state in ("TIMEOUT", "DEADLINE"):
        return Cause.TIME_LIMIT
    if a.state == "PREEMPTED" or stop == "preempted":
        return Cause.PREEMPTED
    if a.state in ("NODE_FAIL", "BOOT_FAIL") or sig in _NODE_SIGNATURES:
        return Cause.NODE_FAILURE
    if stop in _HANG_STOPS or (a.state == "REQUEUED" and not stop):
        return Cause.HANG
    if a.state == "CANCELLED" and not a.error:
        return Cause.CANCELLED
    failed = a.state in ("FAILED", "OUT_OF_MEMORY") or bool(a.error) or stop == "crashed"
    if failed or bool(a.signal) or (a.exit_code or 0) != 0:
        return Cause.CRASH
    return Cause.FINISHED if a.state == "COMPLETED" and stop == "" else Cause.ENDED
