"""What a partition does to a job it preempts: `scontrol show partition` read once.

GraceTime is how long Slurm waits between the first SIGTERM to a preempted job's tasks and the
final TERM/KILL (0, Slurm's default, means at once); PreemptMode says whether a preempted job is
requeued, cancelled or suspended. The submit warning and `rtool drill --preempt` read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rtool.core.slurm.parse import parse_scontrol_record, parse_slurm_duration


class _Scontrol(Protocol):
    def scontrol(self, *args: str) -> str: ...


@dataclass(frozen=True)
class Partition:
    """One partition's preemption settings (grace in seconds)."""

    name: str
    grace: float
    preempt_mode: str
    default: bool
    priority_tier: int

    @property
    def requeues(self) -> bool:
        """A preempted job of this partition goes back to the queue (PreemptMode=REQUEUE)."""
        return "REQUEUE" in self.preempt_mode.upper()


def parse_partitions(text: str) -> list[Partition]:
    """Every record of `scontrol show partition` output (records are separated by blank lines)."""
    out = []
    for block in text.strip().split("\n\n"):
        rec = parse_scontrol_record(block)
        name = rec.get("PartitionName", "")
        if not name:
            continue
        tier = rec.get("PriorityTier", "1")
        out.append(
            Partition(
                name=name,
                grace=_seconds(rec.get("GraceTime", "0")),
                preempt_mode=rec.get("PreemptMode", "OFF"),
                default=rec.get("Default", "NO").upper() == "YES",
                priority_tier=int(tier) if tier.isdigit() else 1,
            )
        )
    return out


def _seconds(text: str) -> float:
    """GraceTime as scontrol prints it: plain seconds ("20") or Slurm's [D-]HH:MM:SS."""
    text = text.strip()
    if text.isdigit():
        return float(text)
    parsed = parse_slurm_duration(text)
    return parsed if parsed is not None else 0.0


def partition(slurm: _Scontrol, name: str | None) -> Partition | None:
    """The named partition (the cluster's default one when `name` is None), or None when
    Slurm does not list it. A comma-separated list names the first partition."""
    wanted = name.split(",")[0].strip() if name else None
    for p in parse_partitions(slurm.scontrol("show", "partition")):
        if (wanted and p.name == wanted) or (not wanted and p.default):
            return p
    return None
