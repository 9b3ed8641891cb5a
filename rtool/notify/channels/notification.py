"""A notification (what goes into the outbox) and the plain-text forms every channel shares.

Stdlib only. Kinds:
  alert     first time a key is not OK (after `min_failures` bad results)
  changed   its status changed while not OK (WARNING -> CRITICAL, ...)
  repeat    still not OK after `repeat_interval`
  resolved  back to OK; `duration` says how long it lasted
  escalated still not OK after an escalation rule's `after`: sent to the rule's channel
  summary   a silence ended: what it held (rtool/notify/silence_escalate.py)
  test      `rtool notify test`
"""

from __future__ import annotations

import socket
from dataclasses import asdict, dataclass, field
from typing import Any

from rtool.core.alert import AlertKey
from rtool.core.units import format_duration

KINDS = ("alert", "changed", "repeat", "resolved", "escalated", "summary", "test")


@dataclass
class Notification:
    id: str  # unique per notification; its per-channel copies share it
    key: str  # alert identity, e.g. `disk:/scratch`
    kind: str  # one of KINDS
    status: str  # status name; OK for a resolved notice
    summary: str
    fields: dict[str, str] = field(default_factory=dict)
    time: float = 0.0  # when it was decided
    incident: str = ""  # id of the first notification of this incident (threads replies)
    previous: str | None = None  # status before a change / before resolving
    since: float | None = None  # first bad result of the incident
    duration: float | None = None  # resolved: how long the incident lasted
    host: str = field(default_factory=socket.gethostname)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Notification:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    @property
    def label(self) -> str:
        """`CRITICAL`, `RESOLVED`, `TEST`: what a subject line starts with."""
        labels = {"resolved": "RESOLVED", "test": "TEST", "summary": "SILENCE ENDED"}
        return labels.get(self.kind, self.status)


def what(key: str) -> tuple[str, str]:
    """`disk:/scratch` -> (`disk`, `/scratch`)."""
    parts = AlertKey.parse(key)
    return parts.kind, parts.what


def title(n: Notification) -> str:
    """`disk /scratch: 91% used (limit 80%)` (the watched thing is not repeated)."""
    kind, thing = what(n.key)
    summary = n.summary
    if (
        thing
        and summary.startswith(thing)
        and summary[len(thing) : len(thing) + 1] in ("", " ", ":")
    ):
        summary = summary[len(thing) :].lstrip(" :-")
    head = f"{kind} {thing}".strip()
    text = f"{head}: {summary}" if summary else head
    if n.kind == "resolved" and n.duration is not None:
        text += f" (lasted {format_duration(n.duration)})"
    return text


def subject(n: Notification) -> str:
    """`[rtool CRITICAL] disk /scratch: 91% used (limit 80%)`."""
    return f"[rtool {n.label}] {title(n)}"


def headline(n: Notification) -> str:
    """One sentence saying what happened."""
    if n.kind == "resolved":
        lasted = f" after {format_duration(n.duration)}" if n.duration is not None else ""
        return f"{n.key} is OK again{lasted} (was {n.previous or 'not OK'})."
    if n.kind == "changed":
        return f"{n.key} changed from {n.previous} to {n.status}."
    if n.kind in ("repeat", "escalated"):
        lasting = f" for {format_duration(n.time - n.since)}" if n.since is not None else ""
        escalated = ": escalated" if n.kind == "escalated" else ""
        return f"{n.key} is still {n.status}{lasting}{escalated}."
    if n.kind == "test":
        return "Test notification from rtool: this channel works."
    if n.kind == "summary":
        return n.summary
    return f"{n.key} is {n.status}."


def all_fields(n: Notification) -> list[tuple[str, str]]:
    """The alert's fields plus key, host and status, in a stable order."""
    out = [("key", n.key), ("status", n.status)]
    if n.previous:
        out.append(("previous", n.previous))
    out.extend(sorted(n.fields.items()))
    if "host" not in n.fields:
        out.append(("host", n.host))
    if n.duration is not None:
        out.append(("lasted", format_duration(n.duration)))
    return out


def body(n: Notification, note: str | None = None) -> str:
    """Plain-text body with every field (email, log file)."""
    lines = [headline(n), "", n.summary, ""]
    width = max(len(k) for k, _ in all_fields(n))
    lines += [f"{k.ljust(width)}  {v}" for k, v in all_fields(n)]
    if note:
        lines += ["", note]
    lines += ["", f"-- rtool on {n.host}"]
    return "\n".join(lines) + "\n"
