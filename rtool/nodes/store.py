"""The suspect-node store: which nodes hurt a run, with the evidence, in the state dir.

One JSON file (`nodes/suspects.json`), written atomically under the `nodes` lock. A node is
suspect while its newest evidence is younger than the expiry (default 24 h); `forget` clears
it by hand. Evidence is deduplicated (the same kind, job and detail is kept once) and bounded
(the newest `MAX_EVIDENCE` per node).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from rtool.core import validate
from rtool.core.alert import clip
from rtool.core.state import StateDir

STORE = "nodes/suspects.json"
LOCK = "nodes"
MAX_EVIDENCE = 20
MAX_OUTPUT = 2000
MAX_DETAIL = 500


class EvidenceKind(str, Enum):
    """Why a node is suspect."""

    NODE_FAIL = "node_fail"  # an attempt on it ended NODE_FAIL (sacct)
    SIGNATURE = "signature"  # a node-level signature in a run's log (XID, ECC, a lost GPU)
    PREFLIGHT = "preflight"  # the pre-flight check failed on it
    DRAIN = "drain"  # Slurm drained it (or set it down) with a reason, under or before a run
    SLOW = "slow"  # consistently the slowest node of a run in two attempts on different peers


@dataclass(frozen=True)
class Evidence:
    kind: EvidenceKind
    detail: str  # one line: `gpus: 7 GPUs visible, 8 requested`, `drained: GPU 3 ECC errors`
    time: float
    run: str | None = None  # the run (job name) it hurt
    job_id: str | None = None  # the attempt (`88_3`)
    output: str = ""  # what the check printed (bounded)

    @property
    def identity(self) -> tuple[str, str | None, str]:
        return (self.kind.value, self.job_id, self.detail)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Evidence | None:
        try:
            return Evidence(
                kind=EvidenceKind(data["kind"]),
                detail=str(data["detail"]),
                time=float(data["time"]),
                run=data["run"] if isinstance(data.get("run"), str) else None,
                job_id=data["job_id"] if isinstance(data.get("job_id"), str) else None,
                output=str(data.get("output") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass
class Suspect:
    node: str
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def since(self) -> float:
        return min(e.time for e in self.evidence)

    @property
    def last(self) -> float:
        return max(e.time for e in self.evidence)

    @property
    def runs(self) -> list[str]:
        return sorted({e.run for e in self.evidence if e.run})

    @property
    def why(self) -> str:
        """The newest evidence, one line: `preflight: gpus: 7 GPUs visible, 8 requested`."""
        newest = max(self.evidence, key=lambda e: e.time)
        return f"{newest.kind.value}: {newest.detail}"

    def expires(self, expiry: float) -> float:
        return self.last + expiry

    def to_json(self, expiry: float) -> dict[str, Any]:
        return {
            "node": self.node,
            "since": self.since,
            "last": self.last,
            "expires": self.expires(expiry),
            "why": self.why,
            "runs": self.runs,
            "evidence": [e.to_json() for e in sorted(self.evidence, key=lambda e: e.time)],
        }


def _valid_node(node: str) -> bool:
    try:
        validate.node(node)
    except validate.ArgvError:
        return False
    return True


def _bounded(evidence: Evidence) -> Evidence:
    """At most MAX_OUTPUT of output (its end) and MAX_DETAIL of detail."""
    detail = clip(evidence.detail, MAX_DETAIL)
    if len(evidence.output) <= MAX_OUTPUT and detail == evidence.detail:
        return evidence
    return dataclasses.replace(evidence, detail=detail, output=evidence.output[-MAX_OUTPUT:])


@dataclass
class SuspectStore:
    """Read and update the suspects of one state dir."""

    state: StateDir
    expiry: float = 24 * 3600.0

    def _raw(self) -> dict[str, Any]:
        raw = self.state.read_json(STORE, default={})
        return raw if isinstance(raw, dict) else {}

    def _forgotten(self) -> dict[str, float]:
        """node -> when it was cleared by hand (older evidence is not taken again)."""
        items = self._raw().get("forgotten")
        if not isinstance(items, dict):
            return {}
        return {str(n): float(t) for n, t in items.items() if isinstance(t, (int, float))}

    def _load(self) -> dict[str, list[Evidence]]:
        nodes = self._raw().get("nodes")
        out: dict[str, list[Evidence]] = {}
        for node, items in (nodes if isinstance(nodes, dict) else {}).items():
            if not isinstance(items, list):
                continue
            evidence = (Evidence.from_json(i) for i in items if isinstance(i, dict))
            kept = [e for e in evidence if e is not None]
            if kept:
                out[str(node)] = kept
        return out

    def _save(self, data: dict[str, list[Evidence]], forgotten: dict[str, float]) -> None:
        nodes = {n: [e.to_json() for e in ev] for n, ev in sorted(data.items()) if ev}
        cutoff = time.time() - self.expiry
        kept = {n: t for n, t in forgotten.items() if t > cutoff}
        self.state.write_json(
            STORE, {"version": 1, "nodes": nodes, "forgotten": kept}, shrink=_drop_oldest
        )

    def record(self, node: str, evidence: Evidence) -> bool:
        """Add evidence against `node`; False when the same evidence was already kept."""
        return bool(self.record_many([(node, evidence)]))

    def record_many(self, items: Iterable[tuple[str, Evidence]]) -> list[tuple[str, Evidence]]:
        """Add evidence against nodes in one read and at most one write (none when nothing is
        new); returns the (node, evidence) pairs that were new."""
        wanted = [(node, _bounded(ev)) for node, ev in items if _valid_node(node)]
        if not wanted:
            return []
        with self.state.lock(LOCK):
            forgotten = self._forgotten()
            now = time.time()
            data = self._prune(self._load(), now)
            new = []
            for node, evidence in wanted:
                if evidence.time <= forgotten.get(node, 0.0):
                    continue
                if evidence.time + self.expiry <= now:
                    continue  # already expired (an old sacct record seen again)
                items_ = data.setdefault(node, [])
                if any(e.identity == evidence.identity for e in items_):
                    continue
                items_.append(evidence)
                data[node] = sorted(items_, key=lambda e: e.time)[-MAX_EVIDENCE:]
                new.append((node, evidence))
            if new:
                self._save(data, forgotten)
        return new

    def forget(self, node: str) -> bool:
        """Clear a node by hand; False when it was not suspect."""
        with self.state.lock(LOCK):
            data = self._load()
            forgotten = self._forgotten()
            found = data.pop(node, None) is not None
            forgotten[node] = time.time()
            self._save(data, forgotten)
        return found

    def suspects(self, now: float | None = None) -> list[Suspect]:
        """The nodes suspect now (newest evidence first)."""
        now = time.time() if now is None else now
        data = self._prune(self._load(), now)
        found = [Suspect(node, ev) for node, ev in data.items()]
        return sorted(found, key=lambda s: s.last, reverse=True)

    def _prune(self, data: dict[str, list[Evidence]], now: float) -> dict[str, list[Evidence]]:
        return {
            n: ev for n, ev in data.items() if ev and max(e.time for e in ev) + self.expiry > now
        }


def _drop_oldest(data: dict[str, Any]) -> dict[str, Any] | None:
    """The store with the output of the oldest evidence dropped, then its oldest nodes: it
    stays under its cap, never moved aside."""
    items = [(e.get("time", 0.0), e) for ev in data["nodes"].values() for e in ev if e["output"]]
    if items:
        items.sort(key=lambda t: t[0])
        for _, e in items[: max(1, len(items) // 2)]:
            e["output"] = ""
        return data
    if not data["nodes"]:
        return None
    newest = {n: max(e["time"] for e in ev) for n, ev in data["nodes"].items()}
    for n in sorted(newest, key=newest.__getitem__)[: max(1, len(newest) // 10)]:
        del data["nodes"][n]
    return data
