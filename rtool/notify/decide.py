"""Per-key alert state: what (if anything) to send for one observation. Pure functions.

A key is notified the first time it is not OK (after `min_failures` consecutive bad results),
when its status changes while not OK, again every `repeat_interval` while it stays not OK,
and once more (`resolved`) when it is OK again. A poll where nothing changed sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rtool.core.alert import Alert, Status


@dataclass
class KeyState:
    status: str = "OK"  # last observed status
    failures: int = 0  # consecutive non-OK observations
    since: float | None = None  # time of the first bad observation of this streak
    notified: str | None = None  # status last notified in this incident (None: no alert out)
    last_sent: float | None = None  # when the last notification of this incident was decided
    incident: str = ""  # id of the incident's first notification
    channels: list[str] = field(default_factory=list)  # channels that got this incident
    version: int = 0  # notifications decided for this key so far (ids derive from it)
    summary: str = ""
    folded_into: str = ""  # the cause's key while this key's alert is folded into it (fold.py)

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict deep-copies every value (a poll writes each key)
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {**data, "channels": list(self.channels)}

    @classmethod
    def from_dict(cls, data: Any) -> KeyState:
        if not isinstance(data, dict):
            return cls()
        state = cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        return state if state._well_typed() else cls()  # a corrupt entry starts afresh

    def _well_typed(self) -> bool:
        num = (int, float)
        return (
            all(
                isinstance(v, str)
                for v in (self.status, self.incident, self.summary, self.folded_into)
            )
            and all(
                isinstance(v, int) and not isinstance(v, bool)
                for v in (self.failures, self.version)
            )
            and all(v is None or isinstance(v, num) for v in (self.since, self.last_sent))
            and (self.notified is None or isinstance(self.notified, str))
            and isinstance(self.channels, list)
            and all(isinstance(c, str) for c in self.channels)
        )


@dataclass
class Decision:
    key: str
    status: str
    kind: str | None  # alert / changed / repeat / resolved, or None: nothing to send
    reason: str
    channels: list[str] = field(default_factory=list)  # where it was queued


def decide(
    prev: KeyState,
    alert: Alert,
    now: float,
    repeat_interval: float,
    min_failures: int = 1,
) -> tuple[KeyState, Decision]:
    """The key's next state and what to send for `alert` observed at `now`."""
    status = Status(alert.status).name
    if status == "OK":
        return _ok(prev, alert.key, now)
    streak = prev.status != "OK"
    new = replace(
        prev,
        status=status,
        failures=prev.failures + 1 if streak else 1,
        since=prev.since if streak and prev.since is not None else now,
        summary=alert.summary,
        folded_into="",
    )
    if prev.notified is None:
        if new.failures < min_failures:
            why = f"{new.failures} of {min_failures} bad results before alerting"
            return new, Decision(alert.key, status, None, why)
        return _sent(new, now), Decision(alert.key, status, "alert", f"became {status}")
    if status != prev.notified:
        why = f"changed {prev.notified} -> {status}"
        return _sent(new, now), Decision(alert.key, status, "changed", why)
    last = prev.last_sent if prev.last_sent is not None else now
    if repeat_interval > 0 and now - last >= repeat_interval:
        why = f"still {status} after the repeat interval"
        return _sent(new, now), Decision(alert.key, status, "repeat", why)
    return new, Decision(alert.key, status, None, f"still {status}, already notified")


def _sent(state: KeyState, now: float) -> KeyState:
    return replace(state, notified=state.status, last_sent=now, version=state.version + 1)


def _ok(prev: KeyState, key: str, now: float) -> tuple[KeyState, Decision]:
    cleared = KeyState(version=prev.version)
    if prev.notified is None:
        why = "OK" if prev.status == "OK" else f"OK again before alerting (was {prev.status})"
        return cleared, Decision(key, "OK", None, why)
    cleared.version += 1
    return cleared, Decision(key, "OK", "resolved", f"OK again (was {prev.status})")
