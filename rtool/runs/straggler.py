"""The slow node of a run (pure; docs/guide/stragglers.md): has the step time regressed against
the run's own median, and which node is consistently the slowest? From rank 0's heartbeat
(rtool.shim.steplog): `step_recent` and `step_baseline`. Medians make a save or an evaluation
inside a few agreements count for nothing.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rtool.core.heartbeat import StepSample
from rtool.runs.model import Attempt

#: Fewest agreements in the recent window, and steady step times in the baseline, to judge.
MIN_CHECKS = 10
MIN_BASELINE = 10
#: The most a rank or node being the slowest that often may owe to chance (20 of 20 checks
#: for a rank; 28 of 30).
ALPHA = 1e-6


@dataclass(frozen=True)
class Limits:
    ratio: float | None = 1.15  # the recent median over the run's median that warns (None: off)
    share: float = 0.9  # the part of the recent checks a node must be the slowest in
    lag: float = 0.05  # its median lag over the ranks' median in those checks (0.05: 5 %)


@dataclass(frozen=True)
class SlowNode:
    node: str
    rank: int | None  # the rank that was slowest there most often
    count: int  # checks it was the slowest in
    of: int  # checks looked at
    lag: float  # its median lag in those checks

    def __str__(self) -> str:
        rank = f" (rank {self.rank})" if self.rank is not None else ""
        lag = f"+{self.lag * 100:.0f} %"
        return f"{self.node}{rank} slowest in {self.count} of {self.of} checks, {lag}"


@dataclass(frozen=True)
class Pace:
    ratio: float | None  # the recent median step time over the run's median (None: too few)
    slow: SlowNode | None  # the node consistently the slowest (None: none)
    regressed: bool


def ratio(recent: Sequence[StepSample], baseline: Sequence[float]) -> float | None:
    """The recent window's median step time over the run's steady median."""
    if len(recent) < MIN_CHECKS or len(baseline) < MIN_BASELINE:
        return None
    base = statistics.median(baseline)
    return statistics.median(s.seconds for s in recent) / base if base > 0 else None


def slowest_node(recent: Sequence[StepSample], limits: Limits, nodes: int = 1) -> SlowNode | None:
    """The rank, else (on `nodes` >= 2) the node, that was the slowest in at least
    `limits.share` of the recent checks, more often than chance would make it (ALPHA; a rank
    counted as one of two, a node as one of `nodes`), with a median lag of at least
    `limits.lag` there. Counting by node finds a slow link (its ranks take turns being the
    slowest); on one node it would name that node every time."""
    named = [s for s in recent if s.node]
    if len(recent) < MIN_CHECKS or not named:
        return None
    keys = [(lambda s: (s.node, s.rank), 0.5)]
    if nodes >= 2:
        keys.append((lambda s: (s.node, None), 1 / nodes))
    for key, chance in keys:
        (node, _), count = Counter(key(s) for s in named).most_common(1)[0]
        if count < limits.share * len(recent) or _tail(count, len(recent), chance) > ALPHA:
            continue
        mine = [s for s in named if s.node == node]
        lag = statistics.median(s.lag or 0.0 for s in mine)
        if lag >= limits.lag and node is not None:
            ranks = Counter(s.rank for s in mine if s.rank is not None).most_common(1)
            return SlowNode(node, ranks[0][0] if ranks else None, count, len(recent), lag)
    return None


def _tail(k: int, n: int, p: float) -> float:
    """The chance of `k` or more successes in `n` tries of chance `p`."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def judge(a: Attempt, limits: Limits) -> Pace:
    """The attempt's pace: its recent step time against the run's, its slowest node."""
    r = ratio(a.step_recent, a.step_baseline)
    regressed = r is not None and limits.ratio is not None and r > limits.ratio
    return Pace(r, slowest_node(a.step_recent, limits, len(set(a.nodes))), regressed)


def warning(pace: Pace) -> str | None:
    """`step time 1.21x the run's median; n2 (rank 3) slowest in 9 of 10 checks, +20 %`, or
    None when the step time holds and no node is consistently the slowest."""
    times = f"step time {pace.ratio:.2f}x the run's median" if pace.ratio is not None else None
    if pace.regressed:
        why = str(pace.slow) if pace.slow is not None else "no node consistently the slowest"
        return f"{times}; {why}"
    if pace.slow is None:
        return None
    return f"{pace.slow}; {times}" if times else str(pace.slow)


@dataclass(frozen=True)
class Suspicion:
    """A node consistently the slowest in two attempts whose other nodes differ."""

    node: str
    attempts: tuple[Attempt, Attempt]
    slow: tuple[SlowNode, SlowNode]

    @property
    def detail(self) -> str:
        """`slow in attempts 2 and 3 (peers n1; n3)`: stable while the attempts run on."""
        a, b = self.attempts
        peers = "; ".join(",".join(p) for p in (peers_of(a, self.node), peers_of(b, self.node)))
        return f"slow in attempts {a.number} and {b.number} (peers {peers})"

    @property
    def output(self) -> str:
        pairs = zip(self.attempts, self.slow, strict=True)
        return "\n".join(f"attempt {a.number} (job {a.job_id}): {s}" for a, s in pairs)


def peers_of(a: Attempt, node: str) -> tuple[str, ...]:
    return tuple(sorted(n for n in a.nodes if n != node))


def suspicions(attempts: Sequence[Attempt], limits: Limits) -> list[Suspicion]:
    """Each node consistently the slowest in two attempts on different peers (the latest such
    pair); an attempt on one node has no peers and counts for nothing."""
    seen: dict[str, list[tuple[Attempt, SlowNode]]] = {}
    for a in attempts:
        slow = slowest_node(a.step_recent, limits, len(set(a.nodes)))
        if slow is not None and peers_of(a, slow.node):
            seen.setdefault(slow.node, []).append((a, slow))
    out = []
    for node, found in seen.items():
        pair = _differing(node, found)
        if pair is not None:
            (a, sa), (b, sb) = pair
            out.append(Suspicion(node, (a, b), (sa, sb)))
    return out


def _differing(
    node: str, found: list[tuple[Attempt, SlowNode]]
) -> tuple[tuple[Attempt, SlowNode], tuple[Attempt, SlowNode]] | None:
    for j in range(len(found) - 1, 0, -1):
        for i in range(j - 1, -1, -1):
            if peers_of(found[i][0], node) != peers_of(found[j][0], node):
                return found[i], found[j]
    return None
