"""Silences, like Alertmanager's: matchers on an alert's labels, a start and an end.

An alert's labels are its `key`, `check` and `what` (the key's two halves: `disk`,
`/scratch`), `status`, `host` and its fields. A matcher is `name=value`, `name!=value`,
`name=~regex` or `name!~regex` (the regex must match the whole value); a bare pattern without
an operator matches the key as a shell glob (`disk:*`). Every matcher of a silence must match.

The store, `<state>/notify/silences.json`, holds each silence with the notifications it held
(bounded); it is rewritten atomically under a lock. Stdlib only.
"""

from __future__ import annotations

import enum
import fnmatch
import getpass
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from rtool.core.errors import UsageError
from rtool.core.state import StateDir
from rtool.notify.channels.notification import Notification, what

FILE = "notify/silences.json"
#: Notifications kept per silence; the others are counted.
MAX_HELD = 500
#: Ended silences stay listed (and their summary known) this long.
KEEP_ENDED = 7 * 86400.0
_MATCHER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$")


class Op(str, enum.Enum):
    EQ = "="
    NE = "!="
    RE = "=~"
    NRE = "!~"
    GLOB = "glob"  # a bare pattern on the key


@dataclass(frozen=True)
class Matcher:
    name: str
    op: Op
    value: str

    def matches(self, labels: dict[str, str]) -> bool:
        have = labels.get(self.name, "")
        if self.op is Op.EQ:
            return have == self.value
        if self.op is Op.NE:
            return have != self.value
        if self.op is Op.GLOB:
            return fnmatch.fnmatchcase(have, self.value)
        found = re.fullmatch(self.value, have) is not None
        return found if self.op is Op.RE else not found

    def __str__(self) -> str:
        return self.value if self.op is Op.GLOB else f"{self.name}{self.op.value}{self.value}"


def parse_matcher(text: str) -> Matcher:
    """`check=disk`, `what=~"/scratch.*"`, `status!=WARNING`, or a key glob `disk:*`."""
    m = _MATCHER.match(text)
    if m is None:
        if not text.strip():
            raise UsageError("a matcher must not be empty")
        return Matcher("key", Op.GLOB, text.strip())
    name, op, value = m.group(1), Op(m.group(2)), m.group(3)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if op in (Op.RE, Op.NRE):
        try:
            re.compile(value)
        except re.error as exc:
            raise UsageError(f"{text!r}: not a valid regular expression ({exc})") from None
    return Matcher(name, op, value)


def labels_of(n: Notification) -> dict[str, str]:
    check, thing = what(n.key)
    base = {"key": n.key, "check": check, "what": thing, "status": n.status, "host": n.host}
    return {**{str(k): str(v) for k, v in n.fields.items()}, **base}


@dataclass
class Silence:
    id: str
    matchers: list[Matcher]
    starts: float
    ends: float
    reason: str = ""
    created_by: str = ""
    summarized: bool = False  # its end was processed (summary queued, held keys reopened)
    held: list[dict[str, Any]] = field(default_factory=list)  # {"notification", "channels"}
    dropped: int = 0  # held beyond MAX_HELD

    def active(self, now: float) -> bool:
        return self.starts <= now < self.ends

    def matches(self, labels: dict[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)

    def describe(self) -> str:
        return ", ".join(str(m) for m in self.matchers)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["matchers"] = [[m.name, m.op.value, m.value] for m in self.matchers]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Silence:
        matchers = [Matcher(str(n), Op(o), str(v)) for n, o, v in d.get("matchers") or []]
        return cls(
            id=str(d["id"]),
            matchers=matchers,
            starts=float(d["starts"]),
            ends=float(d["ends"]),
            reason=str(d.get("reason") or ""),
            created_by=str(d.get("created_by") or ""),
            summarized=bool(d.get("summarized")),
            held=[h for h in d.get("held") or [] if isinstance(h, dict)],
            dropped=int(d.get("dropped") or 0),
        )


@dataclass
class Silences:
    """The silences of a state dir. Mutations go through `edit()` (locked, atomic)."""

    state: StateDir

    def load(self) -> list[Silence]:
        data = self.state.read_json(FILE, {})
        rows = data.get("silences") if isinstance(data, dict) else None
        out = []
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict):
                continue  # a row of the wrong type is dropped, the others kept
            try:
                out.append(Silence.from_dict(row))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
        return out

    @contextmanager
    def edit(self) -> Iterator[list[Silence]]:
        with self.state.lock("notify-silences"):
            items = self.load()
            before = [s.to_dict() for s in items]
            yield items
            after = [s.to_dict() for s in items]
            if after != before:  # most notify runs change nothing: no write, no fsync
                self.state.write_json(FILE, {"silences": after}, shrink=_drop_held)

    def add(self, matchers: list[Matcher], duration: float, reason: str, now: float) -> Silence:
        if not matchers:
            raise UsageError("a silence needs at least one matcher")
        if duration <= 0:
            raise UsageError("--for must be above 0s")
        s = Silence(uuid.uuid4().hex[:8], matchers, now, now + duration, reason, _user())
        with self.edit() as items:
            items.append(s)
        return s

    def expire_now(self, ident: str, now: float) -> Silence:
        """End a silence now (its summary goes out with the next notify run)."""
        with self.edit() as items:
            found = [s for s in items if s.id.startswith(ident) and not s.summarized]
            if len(found) != 1:
                known = ", ".join(s.id for s in items if not s.summarized) or "none"
                why = "no" if not found else "more than one"
                raise UsageError(f"{why} silence in force matches {ident!r} (silences: {known})")
            found[0].ends = min(found[0].ends, now)
            return found[0]

    def active(self, now: float) -> list[Silence]:
        return [s for s in self.load() if s.active(now)]

    def held_count(self) -> int:
        return sum(len(s.held) + s.dropped for s in self.load() if not s.summarized)


def _drop_held(data: dict[str, Any]) -> dict[str, Any] | None:
    """The store with half the held notifications of the silence holding most dropped (they
    are counted in its `dropped`): the file stays under its cap, never moved aside."""
    rows = [r for r in data["silences"] if r.get("held")]
    if not rows:
        return None
    row = max(rows, key=lambda r: len(r["held"]))
    cut = max(1, len(row["held"]) // 2)
    row["dropped"] = int(row.get("dropped") or 0) + cut
    row["held"] = row["held"][cut:]
    return data


def hold(silence: Silence, n: Notification, channels: list[str]) -> None:
    """Keep `n` (and where it would have gone) on the silence, bounded."""
    if len(silence.held) >= MAX_HELD:
        silence.dropped += 1
        return
    silence.held.append({"notification": n.to_dict(), "channels": list(channels)})


def matching(silences: list[Silence], n: Notification, now: float) -> Silence | None:
    """The silence in force that matches `n` (the one ending last), or None."""
    labels = labels_of(n)
    found = [s for s in silences if s.active(now) and s.matches(labels)]
    return max(found, key=lambda s: s.ends) if found else None


def prune(silences: list[Silence], now: float) -> list[Silence]:
    return [s for s in silences if not (s.summarized and now - s.ends > KEEP_ENDED)]


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
