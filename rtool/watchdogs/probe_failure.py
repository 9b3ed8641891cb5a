"""The verdict on a folder whose probe child did not answer (disk and checkpoint watchdogs):
still hung from an earlier sweep, timed out now, or failed; None when the probe answered."""

from __future__ import annotations

from typing import Any, Protocol

from rtool.core.alert import Status
from rtool.core.units import format_duration
from rtool.watchdogs.base import CheckResult


class Probed(Protocol):
    """What a probed folder's observation says about its probe."""

    timeout: float
    mount: str
    statvfs: dict[str, int] | None
    error: str | None
    timed_out: bool
    stuck: dict[str, Any] | None


def probe_failure(
    kind: str, path: str, on_timeout: str, o: Probed, now: float
) -> CheckResult | None:
    """`on_timeout` (warning, critical...) is the status of a probe that hung."""
    bad = Status[on_timeout.upper()]
    if o.stuck:
        ago = format_duration(now - float(o.stuck.get("since", now)))
        pid = o.stuck.get("pid")
        text = f"{path} probe still hung since {ago} ago (pid {pid}), not probed again"
        return CheckResult(kind, path, bad, text, {"mount": o.mount, "error": "stuck"})
    if o.timed_out:
        text = f"{path} probe timed out after {o.timeout:g}s (mount {o.mount} hung?)"
        return CheckResult(kind, path, bad, text, {"mount": o.mount, "error": "timeout"})
    if o.error or o.statvfs is None:
        why = o.error or "no data"
        return CheckResult(kind, path, Status.UNKNOWN, f"{path}: {why}", {"error": why})
    return None
