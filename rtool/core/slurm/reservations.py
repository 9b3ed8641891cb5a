"""Reservations: the pure parser of `scontrol show reservation`, and whether a pending job waits
for one to end (a maintenance window), and until when. Tested on output captured from Slurm
22.05 and 24.11 (tests/core/captured/): such a job pends with `ReqNodeNotAvail, Reserved for
maintenance` or `ReqNodeNotAvail, May be reserved for other job`, a reason that never names the
reservation, so it is found from the nodes and times.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from rtool.core.slurm.nodes import timestamp_or_none
from rtool.core.slurm.parse import expand_hostlist, parse_scontrol_record

#: Pending reasons under which a reservation may be what a job waits for.
RESERVATION_REASONS = ("reqnodenotavail", "resources", "reservation", "nodes required for job")
_NULL = {"", "(null)", "n/a", "none"}


@dataclass(frozen=True)
class Reservation:
    """One reservation of `scontrol show reservation`."""

    name: str
    start: datetime | None
    end: datetime | None
    nodes: tuple[str, ...]
    flags: frozenset[str]
    users: tuple[str, ...] = ()
    state: str = ""  # ACTIVE or INACTIVE (not started yet)

    @property
    def maintenance(self) -> bool:
        return "MAINT" in self.flags

    def blocks(self, now: float, until: float | None) -> bool:
        """It holds its nodes at some time between `now` and `until` (None: ever after)."""
        start = self.start.timestamp() if self.start else now
        end = self.end.timestamp() if self.end else None
        if end is not None and end <= now:
            return False
        return until is None or start < until

    def describe(self) -> str:
        """`maintenance reservation maint-0312` or `reservation gpu-course`."""
        return f"{'maintenance reservation' if self.maintenance else 'reservation'} {self.name}"


def _words(value: str) -> tuple[str, ...]:
    return tuple(w for w in value.split(",") if w.strip().lower() not in _NULL)


def parse_reservations(text: str) -> list[Reservation]:
    """Every reservation in `scontrol show reservation` output (`No reservations in the
    system` gives []). Raises ParseError on a node list it cannot read."""
    out = []
    for chunk in re.split(r"\n\s*\n", text.strip()):
        if "ReservationName=" not in chunk:
            continue
        rec = parse_scontrol_record(chunk)
        nodes = rec.get("Nodes", "")
        out.append(
            Reservation(
                name=rec["ReservationName"],
                start=timestamp_or_none(rec.get("StartTime", "")),
                end=timestamp_or_none(rec.get("EndTime", "")),
                nodes=tuple(expand_hostlist(nodes)) if nodes.lower() not in _NULL else (),
                flags=frozenset(f.strip().upper() for f in _words(rec.get("Flags", ""))),
                users=_words(rec.get("Users", "")),
                state=rec.get("State", ""),
            )
        )
    return out


@dataclass(frozen=True)
class ReservationWait:
    """A pending job can start no earlier than when `reservation` ends (`until`)."""

    reservation: Reservation
    until: datetime

    def describe(self) -> str:
        """`the maintenance reservation maint ends at 2026-11-25 21:31`."""
        return f"the {self.reservation.describe()} ends at {self.until:%Y-%m-%d %H:%M}"


def may_wait_for_reservation(reason: str | None) -> bool:
    """A pending reason under which a reservation can be what the job waits for."""
    low = (reason or "").lower()
    return any(low.startswith(r) for r in RESERVATION_REASONS)


def reservation_wait(
    candidates: Iterable[str],
    needed: int,
    reservations: Iterable[Reservation],
    now: float,
    time_limit: float | None,
    own: str | None = None,
) -> ReservationWait | None:
    """The reservation a pending job waits for, or None when reservations do not explain the
    wait. `candidates`: the usable nodes it may run on (not down or drained); `needed`: how many
    it asks for; `time_limit`: seconds (None: unlimited, so any later reservation is in the way);
    `own`: the reservation the job runs in (never in its way).

    Slurm starts a job only where it can run its whole time limit without meeting a reservation
    it is not in: a node held by one such reservation is free only when the last of them there
    ends. The job waits for reservations when fewer than `needed` candidates are free now; it
    can start when the `needed`-th node frees up: the answer names that node's reservation."""
    until = now + time_limit if time_limit is not None else None
    blocking = [r for r in reservations if r.name != own and r.blocks(now, until)]
    held: dict[str, Reservation] = {}
    for r in blocking:
        for node in r.nodes:
            prev = held.get(node)
            if prev is None or _end(r) > _end(prev):
                held[node] = r
    nodes = list(dict.fromkeys(candidates))
    free = [n for n in nodes if n not in held]
    if needed < 1 or len(free) >= needed or len(nodes) < needed:
        return None
    ends = sorted((held[n] for n in nodes if n in held), key=_end)
    r = ends[needed - len(free) - 1]
    if r.end is None:
        return None  # held for ever: not a wait that ends
    return ReservationWait(r, r.end)


def _end(r: Reservation) -> float:
    return r.end.timestamp() if r.end is not None else float("inf")
