"""Pure parsers of what Slurm says about nodes (`sinfo -N -h -o`, pending reasons) and the
node lists of `scontrol show job` records, tested on output captured from Slurm 22.05 and 24.11
(tests/core/captured/). The nodes a pending job waits for come from what it asked for and what
sinfo says, never from the reason text: 22.05 names them (`UnavailableNodes:n3`), 24.11 does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from rtool.core.slurm.parse import ParseError, expand_hostlist, parse_slurm_timestamp

#: sinfo fields, in order; the reason is last so a `|` inside it cannot shift the others.
SINFO_FIELDS: list[tuple[str, str]] = [
    ("name", "%N"),
    ("partition", "%P"),
    ("state", "%T"),
    ("reason_time", "%H"),
    ("reason_user", "%u"),
    ("reason", "%E"),
]
SINFO_FORMAT = "|".join(code for _, code in SINFO_FIELDS)

#: Node state words (sinfo %T, lower case, without the `*`/`~`/`#` suffixes) of a node that
#: takes no new job.
BAD_STATE_WORDS = ("down", "drain", "fail", "not_responding", "no_respond", "inval")

#: `sacctmgr list events` fields, in order; the reason is last so a `|` inside it is kept.
EVENT_FIELDS = ("NodeName", "State", "TimeStart", "TimeEnd", "Reason")
EVENTS_FORMAT = ",".join(EVENT_FIELDS)

#: Pending reasons that mean "waiting for nodes that are down, drained or reserved".
NODE_REASONS = ("reqnodenotavail", "nodes required for job are down", "nodedown")


@dataclass(frozen=True)
class NodeState:
    """One line of `sinfo -N -h -o SINFO_FORMAT`: a node, its state and Slurm's reason."""

    name: str
    partition: str  # without the default marker `*`
    state: str  # `idle`, `drained`, `down*`, `mixed+drain` ...
    reason: str | None  # None when Slurm gives none
    reason_user: str | None = None
    reason_time: datetime | None = None

    @property
    def is_bad(self) -> bool:
        """Down, drained, draining or failing: takes no new job."""
        s = self.state.lower()
        return any(word in s for word in BAD_STATE_WORDS)

    def describe(self) -> str:
        """`n3 drained (GPU 3 ECC errors)`."""
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.name} {self.state}{why}"


@dataclass(frozen=True)
class NodeEvent:
    """One node event of slurmdbd (`sacctmgr list events event=node`): the node went DOWN,
    DRAIN... at `start` (epoch seconds), with the reason it was given, until `end` (None while
    it lasts)."""

    node: str
    state: str
    start: float | None
    end: float | None
    reason: str | None

    @property
    def is_down(self) -> bool:
        """The node went down (a drain alone ends no job)."""
        return "DOWN" in self.state.upper()


def timestamp_or_none(text: str) -> datetime | None:
    """`parse_slurm_timestamp`, or None for a time it cannot read."""
    try:
        return parse_slurm_timestamp(text)
    except ParseError:
        return None


def _epoch(text: str) -> float | None:
    when = timestamp_or_none(text)
    return when.timestamp() if when is not None else None


def parse_node_events(text: str) -> list[NodeEvent]:
    """Every line of `sacctmgr -n -P list events format=EVENTS_FORMAT`, one event per node."""
    out = []
    for names, state, start, end, reason in _rows(text, EVENT_FIELDS, "event"):
        for node in expand_hostlist(names):
            out.append(NodeEvent(node, state, _epoch(start), _epoch(end), _opt(reason)))
    return out


def _rows(text: str, fields: Sequence[object], what: str) -> Iterator[list[str]]:
    """The `|`-separated fields of each non-empty line, stripped (ParseError on a short one)."""
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", len(fields) - 1)
        if len(parts) != len(fields):
            raise ParseError(f"{what} line has {len(parts)} fields, expected {len(fields)}")
        yield [p.strip() for p in parts]


def _opt(text: str) -> str | None:
    s = text.strip()
    return None if s.lower() in ("", "none", "n/a", "(null)", "unknown") else s


def parse_sinfo_nodes(text: str) -> list[NodeState]:
    """Every line of `sinfo -N -h -o SINFO_FORMAT` (a node in two partitions gives two)."""
    out = []
    for name, partition, state, when, user, reason in _rows(text, SINFO_FIELDS, "sinfo"):
        out.append(
            NodeState(
                name=name,
                partition=partition.rstrip("*"),
                state=state,
                reason=_opt(reason),
                reason_user=_opt(user),
                reason_time=timestamp_or_none(when),
            )
        )
    return out


def pending_records(records: list[dict[str, str]]) -> list[dict[str, str]]:
    """The `scontrol show job` records still pending (an array's running tasks left out)."""
    return [r for r in records if r.get("JobState", "").split(" ", 1)[0] == "PENDING"]


def _hosts(record: dict[str, str], key: str) -> list[str]:
    return expand_hostlist(record.get(key, ""))


def pending_unavailable(
    record: dict[str, str], nodes: list[NodeState], partition: str = ""
) -> list[str]:
    """The down, drained or failing nodes (as sinfo says) among `candidate_nodes`."""
    bad = {n.name for n in nodes if n.is_bad}
    return [n for n in candidate_nodes(record, nodes, partition) if n in bad]


def candidate_nodes(
    record: dict[str, str], nodes: list[NodeState], partition: str = ""
) -> list[str]:
    """The nodes a pending job may run on: those it requires (ReqNodeList), else its
    partitions' nodes, less those it excludes (ExcNodeList). Raises ParseError on a host list
    it cannot read."""
    excluded = set(_hosts(record, "ExcNodeList"))
    candidates = _hosts(record, "ReqNodeList")
    if not candidates:
        parts = set((record.get("Partition") or partition).split(","))
        candidates = [n.name for n in nodes if n.partition in parts]
    return [n for n in dict.fromkeys(candidates) if n not in excluded]


def exclusion_applied(records: list[dict[str, str]], names: list[str]) -> bool:
    """True when every pending record (there is one at least) excludes exactly `names`."""
    pending = pending_records(records)
    try:
        return bool(pending) and all(set(_hosts(r, "ExcNodeList")) == set(names) for r in pending)
    except ParseError:
        return False


def waits_for_nodes(reason: str | None) -> bool:
    """True when a pending reason says the job waits for down, drained or reserved nodes."""
    if not reason:
        return False
    low = reason.lower().replace("_", " ")
    return any(low.startswith(r) for r in NODE_REASONS) or "unavailablenodes:" in low
