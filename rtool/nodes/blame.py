"""NODE_FAIL verdicts kept in the state dir, and the lookup that only asks for what is new.

`nodes/nodefail.json` holds, for the expiry (`[nodes] expiry`, 24 h by default), every judged
NODE_FAIL attempt of yours (`nodefail.Verdict`, keyed by job id and start time) and, for each
set of names looked at (`*`: all your jobs), when it was last looked up. A lookup asks sacct
once for the NODE_FAIL attempts that ended since then (less OVERLAP, for records slurmdbd
writes a little late): `sacct -X -D --state=NODE_FAIL --starttime=... --endtime=now`, with
FailedNode where sacct has it (read from the sacct binary's field table, else asked and
remembered per sacct program: 22.05 is never asked twice in a sweep of an ELF sacct). Only new
attempts are judged, with at most one `sacctmgr list events` call for all of them (and one
`sinfo` when neither says which node failed). A multi-node attempt whose failed node Slurm does
not name yet, that ended less than GRACE ago, is judged on a later lookup (slurmdbd may still
be writing its event); after that it is kept as "not named".
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rtool.core.slurm import NoFailedNode, SacctRecord, Slurm, SlurmError
from rtool.core.slurm.nodes import NodeEvent, NodeState
from rtool.core.slurm.parse import ParseError
from rtool.core.state import StateDir
from rtool.nodes.nodefail import SLACK, Basis, Verdict, attempt_key, judge
from rtool.nodes.store import SuspectStore

log = logging.getLogger(__name__)

MEMORY = "nodes/nodefail.json"
LOCK = "nodes-nodefail"
ALL = "*"
OVERLAP = 120.0
GRACE = 120.0


@dataclass
class Memory:
    looked: dict[str, float] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    waiting: dict[str, float] = field(default_factory=dict)  # attempt key -> its end
    no_failed_node: str | None = None  # the sacct program that has no FailedNode field

    @staticmethod
    def load(state: StateDir) -> Memory:
        raw: Any = state.read_json(MEMORY, default={})
        raw = raw if isinstance(raw, dict) else {}
        mem = Memory(no_failed_node=raw.get("no_failed_node") or None)
        for name, times in (("looked", mem.looked), ("waiting", mem.waiting)):
            for key, value in _dict(raw.get(name)).items():
                if isinstance(value, (int, float)):
                    times[str(key)] = float(value)
        for d in _dict(raw.get("verdicts")).values():
            v = Verdict.from_json(d)
            if v is not None:
                mem.verdicts[v.key] = v
        return mem

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "looked": self.looked,
            "waiting": self.waiting,
            "no_failed_node": self.no_failed_node,
            "verdicts": {k: v.to_json() for k, v in sorted(self.verdicts.items())},
        }

    def merge(self, other: Memory, window: float, now: float) -> None:
        """Take `other`'s (a concurrent lookup's) looks and verdicts; drop what expired."""
        for k, t in other.looked.items():
            self.looked[k] = max(t, self.looked.get(k, 0.0))
        for k, v in other.verdicts.items():
            self.verdicts.setdefault(k, v)
        # the sacct this lookup ran wins: an upgraded one is not asked twice on every sweep
        self.no_failed_node = other.no_failed_node or self.no_failed_node
        cutoff = now - window
        self.looked = {k: t for k, t in self.looked.items() if t > cutoff}
        self.verdicts = {k: v for k, v in self.verdicts.items() if v.when > cutoff}
        waiting = {**self.waiting, **other.waiting}
        self.waiting = {k: t for k, t in waiting.items() if t > cutoff and k not in self.verdicts}


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def sacct_program() -> str:
    """Which sacct runs (path, change time, size): whether it has FailedNode is kept per one."""
    path = shutil.which("sacct") or "sacct"
    try:
        st = os.stat(path)
    except OSError:
        return path
    return f"{os.path.realpath(path)}:{st.st_mtime_ns}:{st.st_size}"


#: Bytes of a sacct binary read for its field table (Debian's 22.05: 86 KB; 24.11: 240 KB).
PROGRAM_MAX = 16 * 1024 * 1024


def sacct_knows_failed_node() -> bool | None:
    """Whether the sacct on PATH has the FailedNode field, read from the binary itself (its
    field table names every field: 24.11's has it, 22.05's not): True or False for an ELF
    binary, None when it cannot tell (a wrapper script, unreadable, too big): then sacct is
    asked with FailedNode and its refusal remembered."""
    path = shutil.which("sacct")
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(PROGRAM_MAX + 1)
    except OSError:
        return None
    if not data.startswith(b"\x7fELF") or len(data) > PROGRAM_MAX:
        return None
    return b"FailedNode" in data


@dataclass
class Lookup:
    new: list[Verdict]  # judged by this lookup
    verdicts: list[Verdict]  # every kept verdict of the names looked at (new ones included)


def _node_fail_records(
    slurm: Slurm, mem: Memory, names: Sequence[str], since: float
) -> list[SacctRecord]:
    program = sacct_program()
    if mem.no_failed_node != program and sacct_knows_failed_node() is False:
        mem.no_failed_node = program  # known without asking sacct twice
    if mem.no_failed_node != program:
        try:
            return slurm.sacct(names=names, since=since, states=["NODE_FAIL"], failed_node=True)
        except NoFailedNode:
            mem.no_failed_node = program
    return slurm.sacct(names=names, since=since, states=["NODE_FAIL"])


def _events(slurm: Slurm, records: list[SacctRecord]) -> list[NodeEvent]:
    nodes = sorted({n for r in records for n in r.nodes})
    starts = [t for r in records for t in (r.start, r.end) if t is not None]
    if not (nodes and starts):
        return []
    try:
        return slurm.node_events(nodes, min(starts) - SLACK, max(starts) + SLACK)
    except (SlurmError, ParseError, ValueError) as exc:
        log.info("no node events (%s): judged without them", exc)
        return []


def judge_new(
    slurm: Slurm, records: list[SacctRecord], states: Sequence[NodeState] | None
) -> list[Verdict]:
    """Judge NODE_FAIL attempts not seen before: one events call, one sinfo when needed."""
    events = _events(slurm, records)
    verdicts = [judge(r, events, states or ()) for r in records]
    unnamed = [i for i, v in enumerate(verdicts) if v.basis is Basis.NONE]
    if unnamed and states is None:
        try:
            lines = slurm.sinfo_nodes()
        except (SlurmError, ParseError) as exc:
            log.info("no node states (%s)", exc)
            lines = []
        for i in unnamed:
            verdicts[i] = judge(records[i], events, lines)
    return verdicts


def refresh(
    slurm: Slurm,
    state: StateDir,
    names: Sequence[str],
    window: float,
    *,
    states: Sequence[NodeState] | None = None,
    now: float | None = None,
) -> Lookup:
    """Look up (one sacct) and judge the NODE_FAIL attempts of `names` (all your jobs when
    empty) that are new since the last lookup; keep the verdicts. Raises SlurmError (and
    AccountingDisabled) when sacct cannot answer; nothing is kept then."""
    now = time.time() if now is None else now
    keys = sorted(set(names)) or [ALL]
    mem = Memory.load(state)
    since = min(mem.looked.get(k, now - window) for k in keys) - OVERLAP
    if mem.waiting:
        since = min(since, min(mem.waiting.values()) - 1)
    since = max(since, now - window)
    records = _node_fail_records(slurm, mem, names, since)
    fresh = {
        attempt_key(r.job_id, r.start, r.end): r
        for r in records
        if r.state == "NODE_FAIL" and r.nodes and (not names or r.name in names)
    }
    todo = [r for k, r in fresh.items() if k not in mem.verdicts]
    new = []
    for r, v in zip(todo, judge_new(slurm, todo, states) if todo else [], strict=True):
        if v.basis is Basis.NONE and len(r.nodes) > 1 and (r.end or now) > now - GRACE:
            mem.waiting[v.key] = r.end or now
            continue
        mem.verdicts[v.key] = v
        mem.waiting.pop(v.key, None)
        new.append(v)
    for k in keys:
        mem.looked[k] = now
    with state.lock(LOCK):
        kept = Memory.load(state)
        kept.merge(mem, window, now)
        state.write_json(MEMORY, kept.to_json())
    mine = [v for v in kept.verdicts.values() if not names or v.run in names]
    return Lookup(new, sorted(mine, key=lambda v: v.when))


def record_node_fails(
    slurm: Slurm, store: SuspectStore, *, names: Sequence[str] | None, window: float
) -> list[Verdict]:
    """Look up the NODE_FAIL attempts of `names` (all your jobs when None), judge the new ones
    and record their failed nodes as suspects; returns the new verdicts. Raises SlurmError
    (AccountingDisabled on a cluster without accounting) when sacct cannot answer."""
    lookup = refresh(slurm, store.state, names or [], window)
    store.record_many((n, v.evidence(n)) for v in lookup.verdicts for n in v.blamed)
    return lookup.new
