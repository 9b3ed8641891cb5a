"""Pure parsers of what Slurm says about nodes (`sinfo -N -h -o`, pending reasons).

No subprocess here: every function is a function of text, tested on captured output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from rtool.core.slurm.parse import ParseError, parse_slurm_timestamp

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

_UNAVAILABLE = re.compile(r"UnavailableNodes:(\S+)")
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


def _opt(text: str) -> str | None:
    s = text.strip()
    return None if s.lower() in ("", "none", "n/a", "(null)", "unknown") else s


def parse_sinfo_nodes(text: str) -> list[NodeState]:
    """Every line of `sinfo -N -h -o SINFO_FORMAT` (a node in two partitions gives two)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", len(SINFO_FIELDS) - 1)
        if len(parts) != len(SINFO_FIELDS):
            raise ParseError(f"sinfo line has {len(parts)} fields, expected {len(SINFO_FIELDS)}")
        name, partition, state, when, user, reason = (p.strip() for p in parts)
        try:
            stamp = parse_slurm_timestamp(when)
        except ParseError:
            stamp = None
        out.append(
            NodeState(
                name=name,
                partition=partition.rstrip("*"),
                state=state,
                reason=_opt(reason),
                reason_user=_opt(user),
                reason_time=stamp,
            )
        )
    return out


def unavailable_nodes(reason: str | None) -> str | None:
    """`ReqNodeNotAvail, UnavailableNodes:n[2-3]` -> `n[2-3]` (a host list), else None."""
    if not reason:
        return None
    m = _UNAVAILABLE.search(reason)
    if not m:
        return None
    nodes = m.group(1).strip(",;)")
    return nodes or None


def waits_for_nodes(reason: str | None) -> bool:
    """True when a pending reason says the job waits for down, drained or reserved nodes."""
    if not reason:
        return False
    low = reason.lower().replace("_", " ")
    return any(low.startswith(r) for r in NODE_REASONS) or "unavailablenodes:" in low
