"""What a check produces and what notify consumes: a status and an alert.

Stdlib only. An alert's identity is its `key` (e.g. `disk:/scratch`, `job:my-training-10b`),
never its text.
"""

from __future__ import annotations

import enum
import hashlib
import time
from dataclasses import dataclass, field
from enum import IntEnum

#: Bounds of an alert (text from outside: command output, log tails, Slurm reasons): longer
#: texts are cut before anything is stored or sent (`Alert.bounded`), so one alert costs at
#: most ~12 KB of state however much a command printed.
MAX_KEY = 300
MAX_SUMMARY = 1000
MAX_FIELDS = 32
MAX_FIELD_NAME = 64
MAX_FIELD_VALUE = 2000
MAX_FIELDS_TOTAL = 8000


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


class Status(IntEnum):
    """Monitoring-plugin statuses; the value is the exit code of `rtool watch`."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3

    @property
    def severity(self) -> int:
        """Order for "worst wins": OK < UNKNOWN < WARNING < CRITICAL."""
        return {0: 0, 3: 1, 1: 2, 2: 3}[int(self)]


def worst(statuses: list[Status]) -> Status:
    """The worst status (CRITICAL > WARNING > UNKNOWN > OK); OK for an empty list."""
    return max(statuses, key=lambda s: s.severity, default=Status.OK)


@dataclass(frozen=True)
class AlertKey:
    """The identity of a watched thing: its kind (the watchdog, `cron`, `preflight`) and what
    (`/scratch`, a job name). Written `disk:/scratch` (`str()`) where it is stored or shown;
    `parse` is the one place that reads that text back."""

    kind: str
    what: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.what}"

    @classmethod
    def parse(cls, text: str) -> AlertKey:
        """`disk:/scratch` -> AlertKey("disk", "/scratch"); a key without `:` has no kind."""
        kind, sep, what = text.partition(":")
        return cls(kind, what) if sep and what else cls("", kind)


class CauseKind(str, enum.Enum):
    """What, outside the training, can explain other alerts (Slurm-aware quieting)."""

    NODE = "node"  # a node of the run is down or drained
    SLURMCTLD = "slurm"  # slurmctld does not answer


@dataclass(frozen=True)
class Cause:
    """Something an alert may follow from: a node (`node:n3`) or slurmctld (`slurm:slurmctld`).
    Its `key` is the key of the alert that speaks for it; notify folds an alert that depends on
    a cause into that alert while it is not OK (rtool/notify/fold.py)."""

    kind: CauseKind
    name: str

    @property
    def key(self) -> str:
        return str(AlertKey(self.kind.value, self.name))

    @classmethod
    def node(cls, name: str) -> Cause:
        return cls(CauseKind.NODE, name)

    @classmethod
    def slurmctld(cls) -> Cause:
        return cls(CauseKind.SLURMCTLD, "slurmctld")


@dataclass
class Alert:
    """One observation of one watched thing, handed to notify."""

    key: str  # str(AlertKey(...)): the identity, stable across runs
    status: Status
    summary: str  # one line: `/scratch 91% used (limit 80%)`
    fields: dict[str, str] = field(default_factory=dict)  # value, threshold, host, job id...
    time: float = field(default_factory=time.time)
    #: The causes it may follow from (its run's nodes, slurmctld): while the alert of one of
    #: them is not OK, this one is folded into it.
    depends: tuple[Cause, ...] = ()

    @property
    def parts(self) -> AlertKey:
        return AlertKey.parse(self.key)

    def bounded(self, factor: int = 1) -> Alert:
        """This alert within the bounds above: summary and field values cut, at most
        MAX_FIELDS fields (MAX_FIELDS_TOTAL characters in all), a key longer than MAX_KEY cut
        and given a digest of the whole (so two long keys stay two identities). `factor`
        widens the text bounds: cut wide, redact, then cut to the bounds, and no secret is
        ever cut in two where it shows."""
        key = self.key
        if len(key) > MAX_KEY:
            digest = hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:12]
            key = f"{key[: MAX_KEY - 14]}~{digest}"
        fields: dict[str, str] = {}
        room = MAX_FIELDS_TOTAL * factor
        for name, value in list(self.fields.items())[:MAX_FIELDS]:
            text = clip(str(value), min(MAX_FIELD_VALUE * factor, max(room, 0)))
            room -= len(text)
            fields[clip(str(name), MAX_FIELD_NAME)] = text
        summary = clip(self.summary, MAX_SUMMARY * factor)
        if (key, summary, fields) == (self.key, self.summary, self.fields):
            return self
        return Alert(key, self.status, summary, fields, self.time)
